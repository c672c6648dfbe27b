/** The CDK app: `cdk synth` / `cdk deploy` from deploy/ (settings in cdk.json's context, or -c key=value). */
import { App } from 'aws-cdk-lib';
import { fileURLToPath } from 'node:url';
import { PingrollStack } from '../lib/pingroll-stack.js';

const app = new App();
const context = (key: string): string => String(app.node.tryGetContext(`pingroll:${key}`) ?? '');
new PingrollStack(app, 'Pingroll', {
  imageDirectory: fileURLToPath(new URL('../..', import.meta.url)),
  shards: Number(context('shards') || 8),
  redshiftWorkgroup: context('redshiftWorkgroup'),
  redshiftWorkgroupArn: context('redshiftWorkgroupArn'),
  redshiftDatabase: context('redshiftDatabase'),
  alarmEmail: context('alarmEmail'),
  stage: context('stage') || undefined,
  ddbTables: context('ddbTables') || undefined,
  redshiftWaitMinutes: Number(context('redshiftWaitMinutes')) || undefined,
  rejectsShareAlarm: Number(context('rejectsShareAlarm')) || undefined,
  catalogDatabase: context('catalogDatabase') || undefined,
  rejectsRetentionDays: Number(context('rejectsRetentionDays')) || undefined,
  closeAfterDays: Number(context('closeAfterDays')) || undefined,
  retentionDays: Number(context('retentionDays')) || undefined,
  athenaBytesScannedCutoff: Number(context('athenaBytesScannedCutoff')) || undefined,
  episodeCatalogKey: context('episodeCatalogKey') || undefined,
});
app.synth();
