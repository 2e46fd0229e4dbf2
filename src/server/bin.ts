#!/usr/bin/env node
/** The `sluice` executable. */
import { runCli } from './cli.js';

runCli(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
