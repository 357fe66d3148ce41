// Validates Kubernetes manifests (multi-document YAML on stdin) offline against the Kubernetes schema with kubernetes-models; prints them as one JSON array.
// NODE_PATH must hold kubernetes-models (4.x) and js-yaml (scripts/setup.sh installs them under /opt/ksight-npm).
'use strict';
const fs = require('fs');
const yaml = require('js-yaml');

const docs = yaml.loadAll(fs.readFileSync(0, 'utf8')).filter((d) => d);
let bad = 0;
for (const d of docs) {
  const [group, version] = d.apiVersion.includes('/') ? d.apiVersion.split('/') : ['', d.apiVersion];
  // kubernetes-models lays out its classes as <group>/<version>/<Kind>, the core group as v1/<Kind>
  const mod = group ? `kubernetes-models/${group}/${version}/${d.kind}` : `kubernetes-models/${version}/${d.kind}`;
  let Model;
  try {
    Model = require(mod)[d.kind];
  } catch (e) {
    console.error(`${d.kind} ${d.apiVersion}: no such kind in the schema (${e.code || e.message})`);
    bad++;
    continue;
  }
  try {
    new Model(d).validate();
  } catch (e) {
    console.error(`${d.kind}/${(d.metadata || {}).name}: ${e.message}`);
    bad++;
  }
}
process.stdout.write(JSON.stringify(docs) + '\n');
process.exit(bad ? 1 : 0);
