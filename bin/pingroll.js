#!/usr/bin/env node
import '../dist/infra/cli/main.js';
