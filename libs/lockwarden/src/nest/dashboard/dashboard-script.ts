/**
 * The page's script, plain browser JavaScript (no build step). It listens to the stream,
 * draws the tables and the timeline with DOM calls only (every text goes in as
 * textContent, so a lock key can never inject markup), and reconnects by itself
 * (EventSource does). Written without template literals: it sits inside one.
 */
export const DASHBOARD_SCRIPT = String.raw`
(function () {
  'use strict';
  var settings = window.LOCKWARDEN_DASHBOARD || {};
  var base = location.pathname.replace(/\/+$/, '');
  var state = null;
  var events = [];
  var WINDOW_MS = 30000;
  // Renewals come every few seconds per lock: they would bury everything else.
  var QUIET = { renewed: true };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') node.textContent = attrs[k];
      else if (k === 'className') node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return node;
  }
  function ms(n) {
    if (n < 1000) return Math.round(n) + ' ms';
    if (n < 60000) return (n / 1000).toFixed(1) + ' s';
    if (n < 3600000) return Math.floor(n / 60000) + ' min ' + Math.round((n % 60000) / 1000) + ' s';
    return (n / 3600000).toFixed(1) + ' h';
  }
  function time(at) { return new Date(at).toLocaleTimeString(); }
  function table(headers, rows, empty) {
    if (rows.length === 0) return el('div', { className: 'empty', text: empty });
    var head = el('tr', null, headers.map(function (h) {
      return el('th', { text: h.replace(/^#/, ''), className: h.charAt(0) === '#' ? 'num' : '' });
    }));
    return el('table', null, [el('thead', null, [head]), el('tbody', null, rows)]);
  }
  function td(text, className) { return el('td', { text: String(text), className: className || '' }); }

  function unlockButton(key) {
    var b = el('button', { text: 'force unlock', 'data-unlock': key });
    b.onclick = function () {
      if (!confirm('Force-unlock ' + key + '? Until its holder notices, two holders may run at once.')) return;
      fetch(base + '/api/unlock?key=' + encodeURIComponent(key), { method: 'POST', headers: { 'x-lockwarden-dashboard': '1' } })
        .then(function (r) { if (!r.ok) return r.text().then(function (t) { alert('force-unlock refused: ' + t); }); });
    };
    return b;
  }

  function drawLocks() {
    var rows = state.locks.map(function (l) {
      var holders = l.holders.map(function (h) { return h.instanceId; }).join(', ');
      var queue = l.queue.map(function (q) { return q.instanceId + ' (' + ms(q.waitedMs) + ')'; }).join(', ');
      var cells = [
        td(l.key, 'mono'), td(l.kind || 'free'), td(holders || '—', 'mono'), td(l.fencingToken === null ? '—' : l.fencingToken, 'num mono'),
        td((l.heldForExact ? '' : '≥ ') + ms(l.heldForMs), 'num'), td(ms(l.leaseLeftMs), 'num'), td(l.waiters, 'num'),
        td(queue || '—', 'mono')
      ];
      if (settings.allowForceUnlock) cells.push(el('td', null, [unlockButton(l.key)]));
      return el('tr', { 'data-lock': l.key }, cells);
    });
    var headers = ['key', 'kind', 'holder', '#fencing token', '#held for', '#lease left', '#waiters', 'fair queue'];
    if (settings.allowForceUnlock) headers.push('');
    $('locks').replaceChildren(table(headers, rows, unknown() || 'No lock is held.'));
  }

  function drawSemaphores() {
    var rows = state.semaphores.map(function (s) {
      var holders = s.holders.map(function (h) { return h.instanceId + ' ×' + h.permits + ' (' + ms(h.leaseLeftMs) + ' left)'; });
      return el('tr', { 'data-semaphore': s.key }, [
        td(s.key, 'mono'), td(s.limit === null ? '—' : s.limit, 'num'), td(s.used, 'num'),
        td(holders.join(', ') || '—', 'mono'), td(s.fencingToken, 'num mono')
      ]);
    });
    $('semaphores').replaceChildren(table(['name', '#limit', '#in use', 'holders', '#last token'], rows, unknown() || 'No semaphore.'));
  }

  function drawLeaderships() {
    var rows = state.leaderships.map(function (l) {
      var recent = l.recent.map(function (t) {
        return t.instanceId + ' #' + t.fencingToken + ' ' + time(t.since) + (t.resigned ? ' (resigned)' : '');
      });
      return el('tr', { 'data-leadership': l.key }, [
        td(l.key, 'mono'), td(l.leading && l.latestTerm ? l.latestTerm.instanceId : 'no leader', 'mono'),
        td(l.latestTerm ? l.latestTerm.fencingToken : '—', 'num mono'), td(l.latestTerm ? time(l.latestTerm.since) : '—'),
        td(recent.join('; ') || '—', 'mono')
      ]);
    });
    $('leaderships').replaceChildren(table(['name', 'leader', '#term', 'since', 'recent terms'], rows, unknown() || 'No leadership.'));
  }

  function drawEvents() {
    var recent = events.filter(function (e) { return !QUIET[e.type]; }).slice(-40).reverse();
    var rows = recent.map(function (e) {
      var detail = [];
      if (e.fencingToken !== undefined) detail.push('token ' + e.fencingToken);
      if (e.waitedMs !== undefined) detail.push('waited ' + ms(e.waitedMs));
      if (e.heldMs !== undefined) detail.push('held ' + ms(e.heldMs));
      if (e.reason) detail.push(e.reason);
      var type = e.handedOff ? 'handed off' : e.type;
      return el('tr', { 'data-event': e.handedOff ? 'handed-off' : e.type }, [
        td(time(e.at)), td(type, e.type === 'lost' ? 'lost' : ''), td(e.key, 'mono'), td(detail.join(', '))
      ]);
    });
    $('events').replaceChildren(table(['at', 'event', 'key', 'detail'], rows, 'No lock event on this instance yet.'));
  }

  // One lane per key (the 12 most recent), a bar from each grant to its release or loss.
  function drawTimeline() {
    var now = Date.now(), from = now - WINDOW_MS;
    var open = {}, bars = [], marks = [], order = [];
    events.forEach(function (e) {
      if (order.indexOf(e.key) < 0) order.push(e.key);
      if (e.type === 'acquired') (open[e.key] = open[e.key] || []).push(e.at);
      else if (e.type === 'released' || e.type === 'lost') {
        var start = (open[e.key] || []).shift();
        bars.push({ key: e.key, from: start === undefined ? e.at - (e.heldMs || 0) : start, to: e.at, lost: e.type === 'lost' });
      } else if (e.type === 'skipped' || e.type === 'timeout' || e.type === 'overrun') marks.push(e);
    });
    for (var k in open) open[k].forEach(function (start) { bars.push({ key: k, from: start, to: now, lost: false, live: true }); });
    var keys = order.filter(function (k) {
      return bars.some(function (b) { return b.key === k && b.to >= from; }) || marks.some(function (m) { return m.key === k && m.at >= from; });
    }).slice(-12);
    if (keys.length === 0) {
      $('timeline').replaceChildren(el('div', { className: 'empty', text: 'Nothing in the last 30 seconds.' }));
      return;
    }
    var NS = 'http://www.w3.org/2000/svg', CHAR = 6.7, LABEL = 28, lane = 18;
    var width = Math.max(480, $('timeline').clientWidth || 800), left = LABEL * CHAR + 12, plot = width - left - 8;
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('width', width); svg.setAttribute('height', keys.length * lane + 22);
    function x(t) { return left + Math.max(0, Math.min(1, (t - from) / WINDOW_MS)) * plot; }
    function add(tag, attrs, text) {
      var n = document.createElementNS(NS, tag);
      for (var a in attrs) n.setAttribute(a, attrs[a]);
      if (text !== undefined) n.textContent = text;
      svg.appendChild(n); return n;
    }
    keys.forEach(function (key, i) {
      var y = i * lane + 4;
      var label = key.length > LABEL ? key.slice(0, LABEL - 1) + '…' : key;
      add('text', { x: 4, y: y + 11 }, label).appendChild(document.createElementNS(NS, 'title')).textContent = key;
      bars.filter(function (b) { return b.key === key && b.to >= from; }).forEach(function (b) {
        var r = add('rect', { x: x(b.from), y: y + 2, width: Math.max(2, x(b.to) - x(b.from)), height: lane - 6, rx: 2,
          fill: b.lost ? 'var(--bad)' : 'var(--bar)', opacity: b.live ? 0.6 : 1 });
        r.appendChild(document.createElementNS(NS, 'title')).textContent = key + ': ' + ms(b.to - b.from) + (b.lost ? ' (lost)' : b.live ? ' (held)' : '');
      });
      marks.filter(function (m) { return m.key === key && m.at >= from; }).forEach(function (m) {
        add('rect', { x: x(m.at) - 1, y: y, width: 2, height: lane - 2, fill: 'var(--warn)' })
          .appendChild(document.createElementNS(NS, 'title')).textContent = key + ': ' + m.type;
      });
    });
    var axis = keys.length * lane + 16;
    add('text', { x: left, y: axis }, '−30 s');
    add('text', { x: width - 40, y: axis }, 'now');
    $('timeline').replaceChildren(svg);
  }

  function drawHeader() {
    $('instance').textContent = state.instanceId;
    $('updated').textContent = 'updated ' + time(state.at);
    $('scan').textContent = 'looked at ' + state.scanned + ' of ' + state.keys + ' keys';
    $('more').hidden = !state.cursor;
    $('error').hidden = !state.error;
    $('error').textContent = state.error ? 'Redis: ' + state.error : '';
    if (state.error) { $('status').className = 'status down'; $('status').textContent = 'Redis unreachable'; }
    else if (source.readyState === 1) live();
    // A server that may evict still serves locks: live, with a warning, not down.
    var ev = state.eviction;
    $('evicting').hidden = !(ev && ev.keysMayBeEvicted);
    $('evicting').textContent = ev && ev.keysMayBeEvicted
      ? 'Redis may evict lock keys (maxmemory-policy ' + ev.evictionPolicy + ', ' + (ev.evictedKeys || 0) +
        ' keys evicted since startup): set maxmemory-policy noeviction, or give the locks a Redis of their own.'
      : '';
  }

  function live() {
    var warned = !!(state && state.eviction && state.eviction.keysMayBeEvicted);
    $('status').className = 'status live' + (warned ? ' warned' : '');
    $('status').textContent = warned ? 'live, with a warning' : 'live';
  }

  // While Redis does not answer, the lists are unknown, not empty.
  function unknown() {
    return state.error ? 'Unknown: Redis cannot be reached.' : null;
  }

  function draw() {
    if (!state) return;
    drawHeader(); drawLocks(); drawSemaphores(); drawLeaderships(); drawEvents(); drawTimeline();
  }

  $('more').onclick = function () {
    fetch(base + '/api/state?cursor=' + encodeURIComponent(state.cursor)).then(function (r) { return r.json(); })
      .then(function (page) { state = page; events = page.events; draw(); });
  };

  var source = new EventSource(base + '/api/stream');
  source.addEventListener('open', live);
  source.addEventListener('error', function () { $('status').className = 'status down'; $('status').textContent = 'reconnecting…'; });
  source.addEventListener('state', function (m) { state = JSON.parse(m.data); events = state.events; draw(); });
  source.addEventListener('event', function (m) {
    if (!state) return;
    events.push(JSON.parse(m.data));
    if (events.length > 1000) events.splice(0, events.length - 1000);
    drawEvents(); drawTimeline();
  });
  setInterval(function () { if (state) drawTimeline(); }, 1000);
})();
`;
