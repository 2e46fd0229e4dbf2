import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

describe('examples/demo (the README quick start)', () => {
  it('runs and shows the chat policy decisions: burst 5 then 12 minutes; no debt on refusals; message burst 10', () => {
    const main = fileURLToPath(new URL('./main.ts', import.meta.url));
    const out = execFileSync(process.execPath, ['--import', 'tsx', main], { encoding: 'utf8' });
    assert.match(out, /attempt 5 from 198\.51\.100\.7\s+admitted\s+remaining +0/);
    assert.match(out, /attempt 6 from 198\.51\.100\.7\s+refused\s+remaining +0\s+retry after 720 s/);
    assert.match(out, /12th guess\s+refused\s+remaining +0\s+retry after 60 s/);
    assert.match(out, /12 messages at once: 10 admitted/);
    assert.doesNotMatch(out, /alice@|password/);
  });
});
