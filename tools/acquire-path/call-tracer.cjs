// A worker for tools/acquire-path/bounces.ts: it debugs the main thread (inspector's
// connectToMainThread) and records, for every entry into the functions it is given, the
// call chain that led there: the synchronous frames, then the awaiting callers (async stack).
// The main thread posts { functions } to start and 'stop' to end; the worker answers
// 'ready' and then { entries }.
const { parentPort } = require('node:worker_threads');
const { Session } = require('node:inspector');

const session = new Session();
session.connectToMainThread();
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  );

const entries = [];
// A paused frame names its script by id only.
const urls = new Map();
session.on('Debugger.scriptParsed', ({ params }) => urls.set(params.scriptId, params.url));
session.on('Debugger.paused', ({ params }) => {
  const chain = params.callFrames.map((f) => ({ url: urls.get(f.location.scriptId) ?? '', name: f.functionName }));
  for (let trace = params.asyncStackTrace; trace; trace = trace.parent)
    for (const f of trace.callFrames) chain.push({ url: f.url, name: f.functionName });
  entries.push(chain);
  session.post('Debugger.resume');
});

/** Line and column of `offset` in `source`, as the debugger counts them (0-based). */
function locate(source, offset) {
  let line = 0;
  let lineStart = 0;
  for (let i = source.indexOf('\n'); i !== -1 && i < offset; i = source.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { lineNumber: line, columnNumber: offset - lineStart };
}

parentPort.on('message', async (message) => {
  if (message === 'stop') {
    await post('Debugger.disable');
    session.disconnect();
    parentPort.postMessage({ entries });
    return;
  }
  await post('Debugger.enable');
  await post('Debugger.setAsyncCallStackDepth', { maxDepth: 64 });
  const sources = new Map();
  for (const fn of message.functions) {
    let source = sources.get(fn.scriptId);
    if (source === undefined) {
      source = (await post('Debugger.getScriptSource', { scriptId: fn.scriptId })).scriptSource;
      sources.set(fn.scriptId, source);
    }
    const at = locate(source, fn.startOffset);
    await post('Debugger.setBreakpoint', { location: { scriptId: fn.scriptId, ...at } }).catch(() => undefined);
  }
  parentPort.postMessage('ready');
});
