/** The CDK app: `cdk synth` / `cdk deploy` from deploy/ (settings in cdk.json's context, or -c pingroll:<option>=value). */
import { App } from 'aws-cdk-lib';
import { fileURLToPath } from 'node:url';
import { PingrollStack } from '../lib/pingroll-stack.js';
import { propsFromContext } from '../lib/props-from-context.js';

const app = new App();
new PingrollStack(app, 'Pingroll', propsFromContext(app.node.getAllContext() as Record<string, unknown>, fileURLToPath(new URL('../..', import.meta.url))));
app.synth();
