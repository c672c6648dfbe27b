/**
 * The published days' partitions in the Glue Data Catalog (`PINGROLL_GLUE_DATABASE`). Athena finds
 * them by partition projection (the tables the deployment makes say how `dt` runs), but Redshift
 * Spectrum, EMR and Glue jobs read only partitions the catalog holds: each day a run publishes is
 * registered in each of its tables, with the table's own storage description at the day's location.
 * Registering a partition that is there already is no error, so a day published again is harmless.
 */
import { BatchCreatePartitionCommand, GetTableCommand, GlueClient, type PartitionInput, type StorageDescriptor } from '@aws-sdk/client-glue';
import type { S3Location } from '../../lib/location.js';

export interface PartitionCatalog {
  readonly description: string;
  /** Registers `dt` of each table; throws with what to do when the catalog refuses. */
  register(parts: Array<{ table: string; dt: string }>): Promise<void>;
}

export class GluePartitions implements PartitionCatalog {
  /** Each table's storage description, asked of Glue once a run. */
  private readonly descriptions = new Map<string, StorageDescriptor>();

  constructor(private readonly glue: GlueClient, private readonly database: string, private readonly output: S3Location) {}

  get description(): string {
    return `glue:${this.database}`;
  }

  async register(parts: Array<{ table: string; dt: string }>): Promise<void> {
    const byTable = new Map<string, string[]>();
    for (const p of parts) byTable.set(p.table, [...(byTable.get(p.table) ?? []), p.dt]);
    for (const [table, dts] of byTable) {
      const sd = await this.storageOf(table);
      const inputs: PartitionInput[] = dts.map((dt) => ({ Values: [dt], StorageDescriptor: { ...sd, Location: `s3://${this.output.bucket}/${this.output.prefix}${table}/dt=${dt}/` } }));
      const r = await this.glue.send(new BatchCreatePartitionCommand({ DatabaseName: this.database, TableName: table, PartitionInputList: inputs }));
      const failed = (r.Errors ?? []).filter((e) => e.ErrorDetail?.ErrorCode !== 'AlreadyExistsException');
      if (failed.length) {
        throw new Error(`Glue did not register ${table} dt=${failed[0]!.PartitionValues?.join(',')} in ${this.database}: ${failed[0]!.ErrorDetail?.ErrorCode}: ${failed[0]!.ErrorDetail?.ErrorMessage}; the day is published, run again`);
      }
    }
  }

  private async storageOf(table: string): Promise<StorageDescriptor> {
    const known = this.descriptions.get(table);
    if (known) return known;
    let sd: StorageDescriptor | undefined;
    try {
      sd = (await this.glue.send(new GetTableCommand({ DatabaseName: this.database, Name: table }))).Table?.StorageDescriptor;
    } catch (err) {
      if ((err as Error).name === 'EntityNotFoundException') throw new Error(`the Glue table ${this.database}.${table} does not exist: deploy the catalog (deploy/) or unset PINGROLL_GLUE_DATABASE; the day is published, run again to register it`);
      throw err;
    }
    if (!sd) throw new Error(`the Glue table ${this.database}.${table} has no storage description; the day is published, run again once the table is right`);
    this.descriptions.set(table, sd);
    return sd;
  }
}
