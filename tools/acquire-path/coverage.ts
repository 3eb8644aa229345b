// V8's precise coverage of this process, taken around one stretch of a call, and where each
// function that ran starts in its TypeScript source (through the inline source map the
// transpiler wrote, tools/ts-register.cjs).
import { Session } from 'node:inspector';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

export interface FunctionCoverage {
  readonly functionName: string;
  readonly ranges: readonly { readonly count: number; readonly startOffset: number; readonly endOffset: number }[];
}

export interface ScriptCoverage {
  readonly scriptId: string;
  readonly url: string;
  readonly functions: readonly FunctionCoverage[];
}

/** A place in a TypeScript file: 0-based line and column, as source maps count them. */
export interface Place {
  readonly line: number;
  readonly column: number;
}

/** A block of a function, and how often it ran. */
export interface Block {
  readonly start: Place;
  readonly end: Place;
  readonly count: number;
}

/**
 * A function that ran: its file, where it starts, how often it was entered, and its blocks
 * (branches, the rest after a return) that ran a different number of times.
 */
export interface RanFunction {
  readonly file: string;
  readonly start: Place;
  readonly count: number;
  readonly blocks: readonly Block[];
}

export function pathOf(url: string): string {
  return url.startsWith('file:') ? fileURLToPath(url) : url;
}

/**
 * The functions of `script` that ran: entered, or resumed after an await (V8 counts only
 * entries for the function, and the blocks that ran after the await for themselves).
 */
export function ranIn(script: ScriptCoverage): FunctionCoverage[] {
  return script.functions.filter((f) => f.ranges.some((r) => r.count > 0));
}

/**
 * Precise coverage (call counts, per block) on this thread. A session on its own thread is
 * answered at once, so `take` can run inside the call it measures: the decorated method itself
 * cuts the call into its grant and its release.
 */
export class Coverage {
  private readonly session = new Session();

  constructor() {
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
    this.take();
  }

  /** What ran since the last take (taking resets the counts). */
  take(): ScriptCoverage[] {
    return (this.post('Profiler.takePreciseCoverage') as { result: ScriptCoverage[] }).result;
  }

  /**
   * Where each function that ran in `scripts` starts in its TypeScript file. Reads the scripts'
   * sources through the debugger, so call it once the measuring is over.
   */
  ranFunctions(scripts: readonly ScriptCoverage[]): RanFunction[] {
    this.post('Debugger.enable');
    const ran: RanFunction[] = [];
    const maps = new Map<string, { source: string; map: SourceMap | undefined }>();
    for (const script of scripts) {
      let entry = maps.get(script.scriptId);
      if (entry === undefined) {
        const { scriptSource } = this.post('Debugger.getScriptSource', { scriptId: script.scriptId }) as {
          scriptSource: string;
        };
        entry = { source: scriptSource, map: inlineSourceMap(scriptSource) };
        maps.set(script.scriptId, entry);
      }
      const { source, map } = entry;
      if (map === undefined) continue;
      const place = (offset: number): Place | undefined => {
        const { line, column } = lineAndColumn(source, offset);
        const found = map.findEntry(line, column) as { originalLine?: number; originalColumn?: number };
        return found.originalLine === undefined || found.originalColumn === undefined
          ? undefined
          : { line: found.originalLine, column: found.originalColumn };
      };
      for (const fn of ranIn(script)) {
        const start = place(fn.ranges[0].startOffset);
        if (start === undefined) continue;
        const blocks: Block[] = [];
        for (const r of fn.ranges.slice(1)) {
          const [from, to] = [place(r.startOffset), place(r.endOffset)];
          if (from && to) blocks.push({ start: from, end: to, count: r.count });
        }
        ran.push({ file: pathOf(script.url), start, count: fn.ranges[0].count, blocks });
      }
    }
    this.post('Debugger.disable');
    return ran;
  }

  stop(): void {
    this.post('Profiler.stopPreciseCoverage');
    this.session.disconnect();
  }

  private post(method: string, params?: object): unknown {
    let answer: unknown;
    let failure: Error | null = null;
    this.session.post(method, params, (err, result) => {
      failure = err;
      answer = result;
    });
    if (failure) throw failure;
    return answer;
  }
}

function inlineSourceMap(source: string): SourceMap | undefined {
  const m = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,(\S+)\s*$/.exec(source);
  return m ? new SourceMap(JSON.parse(Buffer.from(m[1], 'base64').toString('utf8'))) : undefined;
}

/** Line and column of `offset` in `source`, both 0-based, as source maps count them. */
function lineAndColumn(source: string, offset: number): { line: number; column: number } {
  let line = 0;
  let lineStart = 0;
  for (let i = source.indexOf('\n'); i !== -1 && i < offset; i = source.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart };
}
