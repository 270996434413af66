// Runs the CloudFront Function source under node: loads the file into a fresh context (it only
// defines `function handler(event)`, as CloudFront expects), reads a JSON list of viewer-request
// events on stdin and prints the list of results as JSON.
'use strict';
const fs = require('fs');
const vm = require('vm');

const source = fs.readFileSync(process.argv[2], 'utf8');
const context = vm.createContext({});
vm.runInContext(source, context, { filename: process.argv[2] });
const events = JSON.parse(fs.readFileSync(0, 'utf8'));
const results = events.map((event) => context.handler(event));
process.stdout.write(JSON.stringify(results));
