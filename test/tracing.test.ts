import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PUBLIC_DEMO_API_KEY } from '../src/platform/config.ts';
import { tracingRequested } from '../src/platform/tracing/tracing.ts';
import { freePort } from './support/free-port.ts';
import { serverProcessArgs } from './support/server-process.ts';

const root = new URL('..', import.meta.url).pathname;

describe('OpenTelemetry tracing', function () {
  this.timeout(60_000);

  it('is off unless the standard OTEL_* variables ask for it', () => {
    assert.equal(tracingRequested({}), false);
    assert.equal(tracingRequested({ OTEL_SERVICE_NAME: 'civ' }), false);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'none' }), false);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'console, otlp' }), true);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }), false);
  });

  describe('a server started as npm start starts it', () => {
    let child: ChildProcess;
    let output = '';
    let dir: string;
    let base: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'civ-tracing-'));
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      child = spawn(process.execPath, await serverProcessArgs(), {
        cwd: root,
        env: {
          ...process.env,
          PORT: String(port),
          DATABASE_URL: `sqlite:${join(dir, 'tracing.sqlite')}`,
          LOG_LEVEL: 'info',
          // Spans printed on stdout, with the JSON log lines.
          OTEL_TRACES_EXPORTER: 'console',
          OTEL_METRICS_EXPORTER: 'none',
          OTEL_LOGS_EXPORTER: 'none',
          OTEL_BSP_SCHEDULE_DELAY: '100',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      for (let i = 0; ; i++) {
        if (child.exitCode !== null || i > 200) throw new Error(`server did not start:\n${output}`);
        if (output.includes('"msg":"listening"')) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    after(async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      rmSync(dir, { recursive: true, force: true });
    });

    it('joins the request log line and the request span by trace id and request id', async () => {
      const requestId = `trace-test-${Date.now()}`;
      const response = await fetch(`${base}/api/v1/verifications/vrf_unknown`, {
        headers: { authorization: `Bearer ${PUBLIC_DEMO_API_KEY}`, 'x-request-id': requestId },
      });
      assert.equal(response.status, 404);
      let logLine: { trace_id?: string; span_id?: string; requestId?: string } | undefined;
      let spanTraceId: string | undefined;
      for (let i = 0; i < 100 && !(logLine && spanTraceId); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        logLine = output
          .split('\n')
          .filter((line) => line.startsWith('{') && line.includes(requestId))
          .map((line) => JSON.parse(line) as { trace_id?: string; span_id?: string; requestId?: string })[0];
        // The console exporter prints each span as an object literal; the server span lists the header it captured.
        const span = output.split(/\n(?=\{\n)/).find((block) => block.includes(`'http.response.header.x-request-id': [ '${requestId}' ]`));
        spanTraceId = span ? /traceId: '([0-9a-f]{32})'/.exec(span)?.[1] : undefined;
      }
      assert.ok(logLine, 'the request log line');
      assert.ok(spanTraceId, 'the server span carrying the request id');
      assert.equal(logLine.requestId, requestId);
      assert.equal(logLine.trace_id, spanTraceId);
      assert.match(logLine.span_id ?? '', /^[0-9a-f]{16}$/);
      // The span is named by the Express route, not the raw path with its id.
      assert.match(output, /name: 'GET \/api\/v1\/verifications\/:verification_id'/);
    });
  });
});
