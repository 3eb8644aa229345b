import { DASHBOARD_SCRIPT } from './dashboard-script';

/** What the page needs to know when it is served. */
export interface PageSettings {
  allowForceUnlock: boolean;
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #667085; --line: #d0d5dd; --bg: #fff; --band: #f2f4f7;
  --ok: #12b76a; --bad: #d92d20; --warn: #f79009; --bar: #2e90fa; }
@media (prefers-color-scheme: dark) { :root { --fg: #e4e7ec; --muted: #98a2b3; --line: #344054; --bg: #0c111d; --band: #161b26; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; padding: 12px 20px; border-bottom: 1px solid var(--line); }
header h1 { font-size: 18px; margin: 0; }
.status::before { content: '●'; margin-right: 4px; color: var(--warn); }
.status.live::before { color: var(--ok); }
.status.down::before { color: var(--bad); }
.muted { color: var(--muted); }
main { padding: 8px 20px 40px; }
section { margin-top: 18px; }
h2 { font-size: 15px; margin: 0 0 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); background: var(--band); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
.empty { color: var(--muted); font-style: italic; padding: 6px 8px; }
.error { color: var(--bad); font-weight: 600; }
.warning { color: var(--warn); font-weight: 600; }
.status.live.warned::before { color: var(--warn); }
.tag { display: inline-block; padding: 0 6px; border-radius: 8px; background: var(--band); font-size: 12px; }
.lost { color: var(--bad); }
button { font: inherit; cursor: pointer; }
svg text { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11px; fill: var(--fg); }
`;

/**
 * The dashboard's one page: HTML, CSS and a small script, all inline, so that it works
 * offline and behind any proxy. It finds its data relative to its own URL, so a global
 * prefix or a reverse proxy's mount point needs no setting.
 */
export function dashboardPage(settings: PageSettings): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Locks · Lockwarden</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>Locks</h1>
  <span id="status" class="status">connecting…</span>
  <span class="muted">served by <span id="instance" class="mono"></span></span>
  <span id="updated" class="muted"></span>
  <span id="scan" class="muted"></span>
  <button id="more" hidden>next page</button>
</header>
<main>
  <div id="error" class="error" hidden></div>
  <div id="evicting" class="warning" hidden></div>
  <section><h2>Held locks</h2><div id="locks"></div></section>
  <section><h2>Semaphores</h2><div id="semaphores"></div></section>
  <section><h2>Leaderships</h2><div id="leaderships"></div></section>
  <section><h2>This instance: the last 30 seconds</h2><div id="timeline"></div></section>
  <section><h2>This instance: recent events</h2><div id="events"></div></section>
</main>
<script>
window.LOCKWARDEN_DASHBOARD = ${JSON.stringify(settings)};
${DASHBOARD_SCRIPT}
</script>
</body>
</html>
`;
}
