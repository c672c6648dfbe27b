/** How pingroll reaches Redshift (the `PINGROLL_REDSHIFT_*` settings). */
export interface RedshiftConfig {
  /** Serverless workgroup, or a provisioned cluster with a database user or a secret. */
  target: { workgroup: string } | { cluster: string; dbUser: string | null };
  database: string;
  secretArn: string | null;
  schema: string;
  /** The role Redshift assumes to COPY from the output bucket. */
  iamRole: string;
}
