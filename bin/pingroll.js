#!/usr/bin/env node
import '../dist/infra/cli.js';
