/* lean-ctx dashboard: vanilla JavaScript, no build step, nothing fetched from anywhere but this
 * server. Served under a strict Content-Security-Policy ('self' only, no inline script or
 * style attributes): the DOM is built with createElement, and the few computed sizes (gauge
 * and heat bars, tree indentation) are set through the CSSOM (element.style.width).
 *
 * Data:
 * - GET /v1/dashboard/state: one snapshot of the projections; re-fetched (debounced, one request
 *   at a time, spaced by twice the last one's duration) whenever the log grows, and every 10 s
 *   so that statuses derived from time stay right; not while the tab is hidden (it catches up
 *   when shown). A failed first snapshot is shown and retried.
 * - GET /v1/events (SSE, read with fetch() so the bearer token can be sent): the whole log,
 *   which schedules the re-fetch; and a second stream filtered by TopicFilter fields for the
 *   message panel.
 * - /v1/events/search, /v1/events/lineage/{position}, /v1/proof, /v1/proof/verify.
 * Between snapshots the page ticks every second: lease countdowns, lock expiries, heartbeat
 * ages and scent intensities (deposit * 0.5 ** (age / half_life)) move from the server's
 * clock at the snapshot plus the time elapsed here.
 */
(function () {
  'use strict';

  var THEME_KEY = 'lean-ctx-theme';
  var TOKEN_KEY = 'lean-ctx-token';
  var REFRESH_DEBOUNCE_MS = 250;
  var PERIODIC_REFRESH_MS = 10000;
  var STREAM_BACKFILL = 1000; // the message stream starts this many log positions back
  var STREAM_MAX_ITEMS = 200;
  var SVGNS = 'http://www.w3.org/2000/svg';
  var root = document.documentElement;

  // --- theme (before the first paint: this script is loaded synchronously in <head>) ----------
  var media = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

  function storedTheme() {
    try {
      var t = window.localStorage.getItem(THEME_KEY);
      return t === 'light' || t === 'dark' ? t : null;
    } catch (e) {
      return null;
    }
  }

  function applyTheme() {
    var theme = storedTheme() || (media && media.matches ? 'dark' : 'light');
    root.setAttribute('data-theme', theme);
    var label = document.getElementById('theme-label');
    var btn = document.getElementById('theme-toggle');
    if (label) label.textContent = theme === 'dark' ? 'dark' : 'light';
    if (btn) btn.setAttribute('aria-label', 'Switch to ' + (theme === 'dark' ? 'light' : 'dark') + ' theme');
  }
  applyTheme();
  if (media && media.addEventListener) media.addEventListener('change', applyTheme);

  function toggleTheme() {
    var next = root.getAttribute('data-theme') === 'dark' ? 'light' : 'dark';
    try { window.localStorage.setItem(THEME_KEY, next); } catch (e) { /* private mode: this page only */ }
    root.setAttribute('data-theme', next);
    applyTheme();
  }

  // --- the token (from the URL fragment, kept for this tab) ------------------------------------
  var memoryToken = null;

  function getToken() {
    try {
      var t = window.sessionStorage.getItem(TOKEN_KEY);
      if (t) return t;
    } catch (e) { /* fall through */ }
    return memoryToken;
  }

  function setToken(t) {
    memoryToken = t || null;
    try {
      if (t) window.sessionStorage.setItem(TOKEN_KEY, t);
      else window.sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* memory only */ }
  }

  /** Takes `token=` out of the fragment (into sessionStorage); true when one was there. The
   * value is percent-decoded but not read as form data: a `+` in a token stays a `+`. */
  function takeTokenFromHash() {
    var h = window.location.hash.replace(/^#/, '');
    if (!h) return false;
    var found = null, rest = [];
    h.split('&').forEach(function (part) {
      if (found === null && part.slice(0, 6) === 'token=') found = part.slice(6);
      else if (part) rest.push(part);
    });
    if (found === null) return false;
    var t = found;
    try { t = decodeURIComponent(found); } catch (e) { /* not percent-encoded: as typed */ }
    try {
      window.history.replaceState(null, '', window.location.pathname + window.location.search + (rest.length ? '#' + rest.join('&') : ''));
    } catch (e) { /* keep going */ }
    setToken(t.trim());
    return true;
  }
  takeTokenFromHash();

  // --- small helpers -----------------------------------------------------------------------------
  function $(id) { return document.getElementById(id); }

  /** h('div', {class: 'x', 'data-testid': 'y', onclick: fn}, child, 'text', [more]) */
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) setAttrs(el, attrs);
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  function s(tag, attrs) {
    var el = document.createElementNS(SVGNS, tag);
    if (attrs) setAttrs(el, attrs);
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  function setAttrs(el, attrs) {
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'text') el.textContent = String(v);
      else if (k.slice(0, 2) === 'on' && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    });
  }

  function append(el, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(el, c); }); return; }
    el.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }

  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

  function fill(el) {
    clear(el);
    for (var i = 1; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  function fmtInt(n) {
    if (n === null || n === undefined || isNaN(n)) return '–';
    return Math.round(n).toLocaleString('en-US');
  }

  function fmtTokens(n) {
    var a = Math.abs(n), sign = n < 0 ? '−' : '';
    if (a >= 1e6) return sign + (a / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
    if (a >= 1e4) return sign + (a / 1e3).toFixed(0) + 'k';
    if (a >= 1e3) return sign + (a / 1e3).toFixed(1) + 'k';
    return sign + String(Math.round(a));
  }

  function fmtSigned(n) { return (n < 0 ? '−' : '') + fmtInt(Math.abs(n)); }

  function fmtPct(p) { return p === null || p === undefined ? '–' : (p < 0 ? '−' : '') + Math.abs(p).toFixed(1) + '%'; }

  function pad2(n) { return (n < 10 ? '0' : '') + n; }

  /** 42 → "42s", 723 → "12m 03s", 3900 → "1h 05m", 200000 → "2d 7h" */
  function fmtDuration(sec) {
    sec = Math.max(0, Math.floor(sec));
    if (sec < 60) return sec + 's';
    var m = Math.floor(sec / 60);
    if (m < 60) return m + 'm ' + pad2(sec % 60) + 's';
    var hr = Math.floor(m / 60);
    if (hr < 48) return hr + 'h ' + pad2(m % 60) + 'm';
    return Math.floor(hr / 24) + 'd ' + (hr % 24) + 'h';
  }

  function fmtAgo(sec) { return sec < 1 ? 'just now' : fmtDuration(sec) + ' ago'; }

  function fmtClock(iso) {
    var t = Date.parse(iso);
    if (isNaN(t)) return iso || '';
    var d = new Date(t);
    return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  }

  function fmtDateTime(iso) {
    var t = Date.parse(iso);
    if (isNaN(t)) return iso || '–';
    var d = new Date(t);
    return d.getFullYear() + '-' + pad2(d.getMonth() + 1) + '-' + pad2(d.getDate()) + ' ' + fmtClock(iso);
  }

  function shortHash(hx) { return hx ? String(hx).slice(0, 12) : '–'; }

  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }

  /** Commands shown as alternatives ("a or b") rather than steps ("a then b"). */
  function alternatives(list) { list.sep = ' or '; return list; }

  /** The empty state of a panel: what it shows, and the command that fills it. */
  function empty(title, text, command, testid) {
    return h('div', { class: 'empty', 'data-testid': testid || 'empty-state' },
      h('strong', { text: title }),
      text ? h('p', { text: text }) : null,
      command ? h('p', null, 'Try ', [].concat(command).map(function (c, i) {
        return [i ? (Array.isArray(command) && command.sep ? command.sep : ' then ') : null, h('code', { text: c })];
      })) : null);
  }

  // --- HTTP ----------------------------------------------------------------------------------------
  function ApiError(status, code, message) {
    this.status = status;
    this.code = code;
    this.message = message;
  }
  ApiError.prototype = Object.create(Error.prototype);

  function authHeaders(extra) {
    var headers = extra || {};
    var t = getToken();
    if (t) headers.Authorization = 'Bearer ' + t;
    return headers;
  }

  function api(path, opts) {
    opts = opts || {};
    var init = {
      method: opts.method || 'GET',
      headers: authHeaders({ Accept: 'application/json' }),
      cache: 'no-store',
      credentials: 'same-origin',
    };
    if (opts.body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(opts.body);
    }
    return fetch(path, init).then(function (r) {
      return r.text().then(function (text) {
        var data = null;
        if (text) { try { data = JSON.parse(text); } catch (e) { data = null; } }
        var err = data && data.error ? data.error : {};
        if (r.status === 401) {
          needAuth(err);
          throw new ApiError(401, err.code || 'AUTH_TOKEN_REQUIRED', err.message || 'this server needs its token');
        }
        if (!r.ok) throw new ApiError(r.status, err.code || 'HTTP_' + r.status, err.message || r.statusText);
        return data;
      });
    }, function () {
      throw new ApiError(0, 'NETWORK', 'the server cannot be reached');
    });
  }

  // --- SSE over fetch (EventSource cannot send the Authorization header) -----------------------
  /**
   * A server-sent event stream read with fetch() and a ReadableStream: `id:`, `event:`,
   * `data:` and comment lines; reconnects after a failure with Last-Event-ID (the last id
   * received), backing off from 0.5 s to 10 s.
   */
  function SseStream(url, onEvent, onState) {
    this.url = url;
    this.onEvent = onEvent;
    this.onState = onState;
    this.ctrl = null;
    this.lastId = null;
    this.since = null;
    this.timer = null;
    this.backoff = 500;
  }

  SseStream.prototype.start = function (since) {
    this.stop();
    this.since = since;
    this.lastId = null;
    this.backoff = 500;
    this.ctrl = new AbortController();
    this._run(this.ctrl);
  };

  SseStream.prototype.stop = function () {
    if (this.ctrl) this.ctrl.abort();
    this.ctrl = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  };

  SseStream.prototype._retry = function (ctrl, why) {
    var self = this;
    if (ctrl.signal.aborted || self.ctrl !== ctrl) return;
    self.onState('down', why);
    self.timer = setTimeout(function () {
      if (self.ctrl === ctrl) self._run(ctrl);
    }, self.backoff);
    self.backoff = Math.min(Math.max(500, self.backoff * 2), 10000);
  };

  SseStream.prototype._run = function (ctrl) {
    var self = this;
    var headers = authHeaders({ Accept: 'text/event-stream' });
    var url = self.url();
    if (self.lastId !== null) headers['Last-Event-ID'] = String(self.lastId);
    else if (self.since !== null && self.since !== undefined) url += (url.indexOf('?') >= 0 ? '&' : '?') + 'since=' + self.since;
    fetch(url, { headers: headers, signal: ctrl.signal, cache: 'no-store', credentials: 'same-origin' }).then(function (r) {
      if (self.ctrl !== ctrl || ctrl.signal.aborted) return; // stopped (a new filter, a new token) meanwhile
      if (r.status === 401) {
        return r.json().catch(function () { return {}; }).then(function (d) {
          needAuth((d && d.error) || {});
          self.onState('auth');
        });
      }
      if (!r.ok || !r.body) {
        return r.json().catch(function () { return {}; }).then(function (d) {
          var err = (d && d.error) || {};
          if (err.code === 'EVENT_CURSOR_AHEAD') { // the log was replaced: start again from its head
            self.lastId = null;
            self.since = null;
            self.backoff = 0;
          } else if (r.status === 400 || r.status === 422 || r.status === 403) {
            self.onState('refused', err.message || 'the server refused this filter');
            return;
          }
          self._retry(ctrl, err.message || 'HTTP ' + r.status);
        });
      }
      self.backoff = 500;
      self.onState('open');
      return self._read(r.body, ctrl).then(function () { self._retry(ctrl, 'the stream ended'); });
    }).catch(function (e) {
      self._retry(ctrl, e && e.message ? e.message : 'the server cannot be reached');
    });
  };

  SseStream.prototype._read = function (body, ctrl) {
    var self = this;
    var reader = body.getReader();
    var decoder = new TextDecoder('utf-8');
    var carry = '';      // a trailing '\r' that may be the first half of '\r\n'
    var partial = '';    // the unfinished last line
    var cur = { data: [], event: '', id: null };

    function line(l) {
      if (l === '') {
        if (cur.id !== null) self.lastId = cur.id;
        if (cur.data.length) {
          var raw = cur.data.join('\n');
          var parsed = null;
          try { parsed = JSON.parse(raw); } catch (e) { parsed = raw; }
          try { self.onEvent({ id: cur.id, event: cur.event || 'message', data: parsed }); } catch (e) {
            showError('The dashboard could not show an event: ' + (e && e.message));
          }
        }
        cur = { data: [], event: '', id: null };
        return;
      }
      if (l.charAt(0) === ':') return; // a comment (keep-alive ping)
      var c = l.indexOf(':');
      var field = c < 0 ? l : l.slice(0, c);
      var value = c < 0 ? '' : l.slice(c + 1);
      if (value.charAt(0) === ' ') value = value.slice(1);
      if (field === 'data') cur.data.push(value);
      else if (field === 'event') cur.event = value;
      else if (field === 'id') { if (value.indexOf('\u0000') < 0) cur.id = value; }
    }

    function pump() {
      return reader.read().then(function (res) {
        if (res.done || ctrl.signal.aborted) return;
        var text = carry + decoder.decode(res.value, { stream: true });
        carry = '';
        if (text.charAt(text.length - 1) === '\r') { carry = '\r'; text = text.slice(0, -1); }
        var lines = (partial + text.replace(/\r\n?/g, '\n')).split('\n');
        partial = lines.pop();
        lines.forEach(line);
        return pump();
      });
    }
    return pump();
  };

  // --- state ----------------------------------------------------------------------------------------
  var state = null;         // the last snapshot
  var stateAt = 0;          // performance.now() when it arrived
  var refreshTimer = null;
  var inflight = null;      // the snapshot request under way: never two at once, so an older
  var refreshAgain = false; // answer cannot overwrite a newer one
  var lastTook = 0;         // ms the last snapshot took: the next waits at least twice that
  var lastDone = 0;         // performance.now() when it ended
  var hiddenStale = false;  // a refresh was skipped while the tab was hidden
  var authNeeded = false;
  var live = false;         // the streams run (opened after the first snapshot)
  var lastHead = 0;

  function elapsed() { return state ? (performance.now() - stateAt) / 1000 : 0; }

  /** A snapshot soon: `delay` ms from now (default: the debounce), and never sooner than twice
   * the last snapshot's duration after it ended, so a busy log cannot keep the server building
   * snapshots back to back; one timer at a time, whatever the number of events. */
  function scheduleRefresh(delay) {
    if (refreshTimer) return;
    var wait = delay === undefined ? REFRESH_DEBOUNCE_MS : delay;
    wait = Math.max(wait, lastDone + 2 * lastTook - performance.now());
    refreshTimer = setTimeout(function () {
      refreshTimer = null;
      if (document.hidden && state) { hiddenStale = true; return; } // caught up when shown again
      refresh();
    }, Math.max(0, wait));
  }

  function refresh() {
    if (inflight) { refreshAgain = true; return inflight; }
    var began = performance.now();
    inflight = api('/v1/dashboard/state').then(function (st) {
      state = st;
      stateAt = performance.now();
      hideError();
      hideAuth();
      render();
      if (!live) goLive();
    }).catch(function (e) {
      if (e.status === 401) return;
      showError('Could not load the dashboard data: ' + e.message + (e.code ? ' (' + e.code + ')' : '') +
        (state ? '' : '; retrying…'));
      if (!state) refreshAgain = true; // nothing shown yet: try again (spaced like any refresh)
    }).then(function () {
      lastDone = performance.now();
      lastTook = Math.min(lastDone - began, 5000);
      inflight = null;
      if (refreshAgain) { refreshAgain = false; scheduleRefresh(state ? undefined : 2000); }
    });
    return inflight;
  }

  // --- banners and the connection badge ------------------------------------------------------------
  function needAuth(err) {
    authNeeded = true;
    var banner = $('auth-banner');
    if (!banner) return;
    var detail = $('auth-detail');
    if (detail) {
      detail.textContent = getToken()
        ? 'The token this page has is not the one the server was started with' +
          (err && err.code ? ' (' + err.code + ').' : '.')
        : 'It was started with --token, and this page has not been given it' +
          (err && err.code ? ' (' + err.code + ').' : '.');
    }
    banner.hidden = false;
    setConn('auth', 'token needed');
  }

  function hideAuth() {
    authNeeded = false;
    var banner = $('auth-banner');
    if (banner) banner.hidden = true;
  }

  function showError(msg) {
    var b = $('error-banner');
    if (!b) return;
    b.textContent = msg;
    b.hidden = false;
  }

  function hideError() {
    var b = $('error-banner');
    if (b) b.hidden = true;
  }

  function setConn(kind, text) {
    var el = $('conn');
    if (!el) return;
    el.className = 'conn conn-' + kind;
    el.textContent = text;
    el.setAttribute('data-state', kind);
  }

  // --- rendering: header ----------------------------------------------------------------------------
  function renderHeader() {
    $('project').textContent = state.project_root;
    $('project').title = 'project root: ' + state.project_root;
    var hp = $('head-pos');
    hp.textContent = '#' + fmtInt(state.head.position);
    hp.title = 'head ' + state.head.position + ' · hash ' + state.head.hash + ' · click: its lineage';
    hp.setAttribute('data-position', String(state.head.position));
    $('updated').textContent = 'updated ' + fmtClock(state.generated_at);
    lastHead = Math.max(lastHead, state.head.position);
  }

  // --- agents ---------------------------------------------------------------------------------------
  function gauge(budget) {
    var unlimited = !budget.limit;
    var pct = unlimited ? 0 : budget.ratio * 100;
    var fillEl = h('div', { class: 'gauge-fill', 'data-testid': 'budget-fill' });
    fillEl.style.width = (unlimited ? 100 : Math.min(100, pct)) + '%';
    var m80 = h('div', { class: 'gauge-mark', title: '80 %: warning' });
    m80.style.left = '80%';
    var label = unlimited
      ? [h('span', { text: fmtInt(budget.used) + ' tokens' }), h('span', { class: 'pct', text: 'no limit' })]
      : [h('span', { text: fmtInt(budget.used) + ' / ' + fmtInt(budget.limit) }), h('span', { class: 'pct', text: pct.toFixed(0) + '%' })];
    // a meter's value lies within its range: past the limit it is full, and the text says by how much
    var aria = unlimited
      ? { role: 'img', 'aria-label': 'token budget: ' + fmtInt(budget.used) + ' tokens used, no limit' }
      : { role: 'meter', 'aria-label': 'token budget', 'aria-valuemin': '0', 'aria-valuemax': String(budget.limit),
        'aria-valuenow': String(Math.min(budget.used, budget.limit)),
        'aria-valuetext': fmtInt(budget.used) + ' of ' + fmtInt(budget.limit) + ' tokens (' + pct.toFixed(0) + '%)' };
    return h('div', Object.assign(aria, {
      class: 'gauge level-' + budget.level + (unlimited ? ' unlimited' : ''),
      'data-testid': 'budget-gauge', 'data-level': budget.level, 'data-ratio': String(budget.ratio),
      title: unlimited ? 'no budget set (lean-ctx agent budget --set N)'
        : budget.level === 'exceeded' ? 'budget exceeded: reads are refused'
          : budget.level === 'warning' ? 'over 80 % of the budget' : 'within budget',
    }), h('div', { class: 'gauge-label' }, label), h('div', { class: 'gauge-track' }, fillEl, unlimited ? null : m80));
  }

  function renderAgents() {
    var body = $('agents-body');
    var c = state.agent_counts || {};
    $('count-agents').textContent = state.agents.length
      ? plural(c.total || state.agents.length, 'agent') + ' · ' + (c.active || 0) + ' active · ' + (c.idle || 0) + ' idle · ' + (c.stale || 0) + ' stale'
      : '';
    if (!state.agents.length) {
      fill(body, empty('No agents registered', 'Agents appear here when they register; their status follows their heartbeats (active, idle, stale) and their budget fills as they read.',
        'lean-ctx agent register --type claude --role dev', 'empty-agents'));
      return;
    }
    var list = h('div', { class: 'agents', role: 'list' });
    state.agents.forEach(function (da) {
      var a = da.agent;
      var reported = a.reported_status ? h('span', { class: 'tag', title: 'reported status', text: a.reported_status }) : null;
      list.appendChild(h('div', { class: 'agent', role: 'listitem', 'data-testid': 'agent-row', 'data-agent-id': a.agent_id, 'data-status': a.status },
        h('div', null,
          h('div', { class: 'agent-name', title: a.agent_id }, a.name || a.agent_id,
            a.name && a.name !== a.agent_id ? h('span', { class: 'muted mono', text: ' ' + a.agent_id }) : null),
          h('div', { class: 'agent-meta' },
            h('span', { class: 'badge st-' + a.status, 'data-testid': 'agent-status', text: a.status }),
            h('span', { class: 'tag', title: 'type', text: a.agent_type || '?' }),
            a.role ? h('span', { class: 'tag', title: 'role', text: a.role }) : null,
            reported,
            h('span', { class: 'js-age', 'data-age': String(a.age_seconds), title: 'last heartbeat ' + a.last_seen + ' (' + plural(a.heartbeats || 0, 'heartbeat') + ')', text: 'heartbeat ' + fmtAgo(a.age_seconds) }))),
        gauge(da.budget)));
    });
    fill(body, list);
  }

  // --- tasks and locks --------------------------------------------------------------------------------
  function leaseText(remaining) {
    return remaining > 0 ? 'lease ' + fmtDuration(remaining) : 'lease expired';
  }

  function taskCard(t) {
    var waiting = {};
    (t.waiting_on || []).forEach(function (d) { waiting[d] = true; });
    var lease = null;
    if (t.status === 'in_progress' && t.lease_remaining_seconds !== null && t.lease_remaining_seconds !== undefined) {
      lease = h('span', { class: 'lease js-countdown', 'data-remaining': String(t.lease_remaining_seconds), 'data-prefix': 'lease',
        'data-testid': 'lease', title: 'lease until ' + t.lease_expires_at, text: leaseText(t.lease_remaining_seconds) });
    } else if (t.lease_state === 'expired') {
      lease = h('span', { class: 'lease gone', text: 'lease expired' });
    }
    var deps = (t.depends_on || []).length ? h('div', { class: 'deps', 'data-testid': 'deps' }, 'needs',
      t.depends_on.map(function (d) {
        return h('span', { class: 'dep ' + (waiting[d] ? 'waiting' : 'met'), 'data-dep': d,
          title: waiting[d] ? d + ' is not done yet' : d + ' is done', text: (waiting[d] ? '○ ' : '✓ ') + d });
      })) : null;
    return h('li', { class: 'card', 'data-testid': 'task-card', 'data-task-id': t.task_id, 'data-channel': t.channel, 'data-status': t.status },
      h('div', { class: 'card-top' }, h('span', { class: 'card-id', text: t.task_id }), h('span', { class: 'card-title', text: t.title })),
      h('div', { class: 'card-meta' },
        t.channel !== 'general' ? h('span', { text: '#' + t.channel }) : null,
        t.owner ? h('span', { 'data-testid': 'owner', title: 'owner', text: '@' + t.owner }) : h('span', { class: 'muted', text: 'unowned' }),
        t.to_agent ? h('span', { title: 'assigned to', text: '→ ' + t.to_agent }) : null,
        lease),
      t.blocked_reason ? h('div', { class: 'card-meta', text: 'blocked: ' + t.blocked_reason }) : null,
      deps);
  }

  var FINISHED = { done: true, cancelled: true };
  var FINISHED_SHOWN = 30;

  function renderTasks() {
    var body = $('tasks-body');
    var cols = state.task_columns && state.task_columns.length ? state.task_columns : ['open', 'in_progress', 'blocked', 'done', 'cancelled'];
    var by = {};
    cols.forEach(function (c) { by[c] = []; });
    state.tasks.forEach(function (t) { (by[t.status] = by[t.status] || []).push(t); });
    var open = (by.open || []).length + (by.in_progress || []).length + (by.blocked || []).length;
    $('count-tasks').textContent = state.tasks.length ? plural(state.tasks.length, 'task') + ' · ' + open + ' not finished' : '';
    if (!state.tasks.length) {
      fill(body, empty('No tasks yet', 'Tasks show up here by state (open, in progress, blocked, done, cancelled) with their owner, lease countdown and dependencies.',
        ['lean-ctx chat task create --title "fix the race"', 'lean-ctx chat task claim t1'], 'empty-tasks'));
    } else {
      var board = h('div', { class: 'board' });
      Object.keys(by).forEach(function (col) {
        var tasks = by[col];
        // finished tasks pile up over a project's life: show the latest ones, and say how many more
        var shown = tasks, older = 0;
        if (FINISHED[col] && tasks.length > FINISHED_SHOWN) {
          var keep = tasks.slice().sort(function (a, b) { return a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0; })
            .slice(0, FINISHED_SHOWN);
          shown = tasks.filter(function (t) { return keep.indexOf(t) >= 0; });
          older = tasks.length - shown.length;
        }
        board.appendChild(h('section', { class: 'column col-' + col, 'data-testid': 'task-column', 'data-status': col, 'aria-label': col.replace('_', ' ') },
          h('div', { class: 'column-head' }, h('span', { text: col.replace('_', ' ') }), h('span', { class: 'count', text: String(tasks.length) })),
          h('ul', { class: 'column-cards' }, tasks.length ? shown.map(taskCard) : h('li', { class: 'column-empty', text: 'none' }),
            older ? h('li', { class: 'column-empty', 'data-testid': 'column-more', text: older + ' older not shown (lean-ctx chat task list --any-channel --status ' + col + ')' }) : null)));
      });
      fill(body, board);
    }
    renderLocks();
  }

  function renderLocks() {
    var body = $('locks-body');
    var live = state.locks.filter(function (l) { return !l.expired; }).length;
    $('count-locks').textContent = state.locks.length ? live + ' held' + (state.locks.length > live ? ' · ' + (state.locks.length - live) + ' expired' : '') : '';
    if (!state.locks.length) {
      fill(body, empty('No path locks', 'A lock reserves a file or folder for one agent for a while (a git pre-commit hook refuses commits touching others\' locks).',
        'lean-ctx chat lock src/lock.py --ttl 600', 'empty-locks'));
      return;
    }
    var rows = state.locks.map(function (l) {
      return h('tr', { class: l.expired ? 'expired' : null, 'data-testid': 'lock-row', 'data-path': l.display || l.path },
        h('td', { class: 'mono' }, (l.display || l.path) + (l.directory ? '/' : '')),
        h('td', { text: l.owner }),
        h('td', { class: 'num' }, l.expired ? h('span', { text: 'expired' })
          : h('span', { class: 'lease js-countdown', 'data-remaining': String(l.expires_in), 'data-prefix': '', title: 'until ' + l.expires_at, text: fmtDuration(l.expires_in) })),
        h('td', { class: 'num muted', text: fmtDuration(l.lease_seconds) }),
        h('td', { class: 'muted', text: l.reason || '' }));
    });
    fill(body, h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'locks-table' },
      h('thead', null, h('tr', null, h('th', { text: 'path' }), h('th', { text: 'owner' }), h('th', { class: 'num', text: 'expires in' }),
        h('th', { class: 'num', text: 'lease' }), h('th', { text: 'reason' }))),
      h('tbody', null, rows))));
  }

  // --- scent field ------------------------------------------------------------------------------------
  var KINDS = ['CLAIMED', 'HOT', 'STUCK', 'DONE', 'AVOID'];

  function intensityAt(m, dt) {
    var hl = m.half_life_seconds > 0 ? m.half_life_seconds : 1;
    return m.deposit_intensity * Math.pow(0.5, (m.age_seconds + dt) / hl);
  }

  function renderScent() {
    var body = $('scent-body');
    var marks = state.scent || [];
    if (!marks.length) {
      $('count-scent').textContent = '';
      fill(body, empty('The scent field is empty', 'Claims and reads leave marks on files that fade with a half-life (CLAIMED/HOT 10 min, STUCK 30, DONE/AVOID 60): a live heat map of who works where.',
        'lean-ctx agent claim src/app.py', 'empty-scent'));
      return;
    }
    var legend = h('div', { class: 'legend', 'aria-hidden': 'true' }, KINDS.map(function (k) {
      return h('span', { class: 'legend-item kind-' + k }, h('span', { class: 'swatch' }), k);
    }));
    var list = h('ul', { class: 'scent-list', 'data-testid': 'scent-list' });
    marks.forEach(function (m) {
      var bar = h('div', { class: 'heat-fill' });
      list.appendChild(h('li', {
        class: 'scent-row kind-' + m.kind, 'data-testid': 'scent-row', 'data-target': m.target, 'data-kind': m.kind,
        'data-deposit': String(m.deposit_intensity), 'data-age': String(m.age_seconds), 'data-half-life': String(m.half_life_seconds),
        title: m.kind + ' on ' + m.target + ' by ' + (m.name || m.agent) + ', deposited ' + m.deposited_at + ', half-life ' + fmtDuration(m.half_life_seconds),
      },
        h('div', { class: 'scent-main' },
          h('div', { class: 'scent-target', text: m.target }),
          h('div', { class: 'scent-who' },
            h('span', { class: 'kind-badge', 'data-testid': 'scent-kind', text: m.kind }),
            h('span', { text: m.name || m.agent }),
            m.active ? h('span', { class: 'tag', title: 'an exclusive claim in force', text: 'claim' }) : null,
            m.deposits > 1 ? h('span', { text: '×' + m.deposits }) : null)),
        h('div', { class: 'heat-track', role: 'presentation' }, bar),
        h('div', { class: 'scent-value', 'data-testid': 'scent-intensity' })));
    });
    fill(body, legend, list);
    tickScent(true);
  }

  function tickScent(first) {
    if (!state) return;
    var dt = elapsed();
    var floor = state.scent_floor || 0;
    var rows = document.querySelectorAll('#scent-body .scent-row');
    var shown = 0;
    var max = 1;
    rows.forEach(function (row) { max = Math.max(max, parseFloat(row.getAttribute('data-deposit')) || 0); });
    rows.forEach(function (row) {
      var m = {
        deposit_intensity: parseFloat(row.getAttribute('data-deposit')),
        age_seconds: parseFloat(row.getAttribute('data-age')),
        half_life_seconds: parseFloat(row.getAttribute('data-half-life')),
      };
      var v = intensityAt(m, dt);
      var below = v < floor;
      row.classList.toggle('below-floor', below);
      row.setAttribute('data-intensity', v.toFixed(6));
      var fillEl = row.querySelector('.heat-fill');
      if (first) fillEl.style.transition = 'none';
      fillEl.style.width = Math.max(0, Math.min(100, (v / max) * 100)).toFixed(2) + '%';
      fillEl.style.opacity = String(0.35 + 0.65 * Math.min(1, v / max));
      if (first) { void fillEl.offsetWidth; fillEl.style.transition = ''; }
      row.querySelector('.scent-value').textContent = v.toFixed(4);
      if (!below) shown++;
    });
    $('count-scent').textContent = plural(shown, 'mark') + ' above the floor ' + floor;
  }

  // --- channels and the message stream ----------------------------------------------------------------
  var stream = null;
  var streamFilter = { kinds: 'message.*' };
  var streamCount = 0;
  var streamFreshAfter = Infinity; // events past this position arrived live (not the backfill)

  function filterQuery(f) {
    var q = new URLSearchParams();
    ['kinds', 'actor', 'to_agent', 'channel', 'stream_prefix'].forEach(function (k) {
      var v = (f[k] || '').trim();
      if (!v) return;
      if (k === 'kinds') v.split(/[\s,]+/).filter(Boolean).forEach(function (x) { q.append('kinds', x); });
      else q.set(k, v);
    });
    return q.toString();
  }

  function describeFilter(f) {
    var parts = [];
    ['kinds', 'actor', 'to_agent', 'channel', 'stream_prefix'].forEach(function (k) {
      var v = (f[k] || '').trim();
      if (v) parts.push(k + '=' + v);
    });
    return parts.length ? parts.join(' · ') : 'every event';
  }

  function renderChannels() {
    var body = $('channels-body');
    var chans = state.channels || [];
    var posted = chans.reduce(function (n, c) { return n + (c.last_seq || 0); }, 0);
    if (!posted && chans.length <= 1) {
      fill(body, empty('No messages yet', 'Channels, and every message posted to them, live here; the stream below follows the log as it grows.',
        'lean-ctx chat post --title "found a race" --body "in the lock code"', 'empty-messages'));
      return;
    }
    var wrap = h('div', { class: 'channels', role: 'group', 'aria-label': 'channels (click to filter the stream)' });
    chans.forEach(function (c) {
      var active = (streamFilter.channel || '') === c.name;
      wrap.appendChild(h('button', {
        type: 'button', class: 'channel-chip', 'data-testid': 'channel', 'data-channel': c.name, 'aria-pressed': active ? 'true' : 'false',
        title: (c.topic ? c.topic + ' · ' : '') + (c.members && c.members.length ? 'members: ' + c.members.join(', ') : 'open to all') +
          ' · ' + plural(c.last_seq || 0, 'message') + ' posted' + (c.messages !== c.last_seq ? ' (' + c.messages + ' broadcast)' : ''),
        onclick: function () {
          var f = readFilterForm();
          f.channel = active ? '' : c.name;
          writeFilterForm(f);
          applyFilter(f);
        },
      }, '#' + c.name, h('span', { class: 'n', text: String(c.last_seq || 0) })));
    });
    fill(body, wrap);
  }

  function summarize(e) {
    var p = e.payload || e.data || {};
    var k = e.kind || '';
    function str(v) { return v === null || v === undefined ? '' : String(v); }
    if (k === 'message.posted') return [h('span', { class: 'ev-title', text: str(p.title) }), p.body ? ' — ' + str(p.body) : ''];
    if (k === 'tool.called') return str(p.command) + ' → ' + str(p.outcome) + (p.error_code ? ' ' + p.error_code : '') + (p.duration_ms !== undefined ? ' · ' + p.duration_ms + ' ms' : '');
    if (k.indexOf('task.') === 0) return [str(p.task_id), p.title ? ' ' + p.title : '', p.owner ? ' @' + p.owner : '', p.reason ? ' (' + p.reason + ')' : ''].join('');
    if (k.indexOf('scent.') === 0) return [str(p.scent || p.kind_ || ''), ' ', str(p.target)].join('').trim();
    if (k.indexOf('lock.') === 0) return str(p.path) + (p.owner ? ' @' + p.owner : '');
    if (k === 'file.read') return str(p.path) + (p.mode ? ' (' + p.mode + ')' : '');
    if (k === 'shell.ran') return str(p.command) + ' → exit ' + str(p.exit_code);
    if (k.indexOf('agent.') === 0) return str(p.name || p.agent_id) + (p.status ? ' ' + p.status : '') + (p.reason ? ' (' + p.reason + ')' : '');
    if (k.indexOf('budget.') === 0) return str(p.agent_id) + (p.tokens !== undefined ? ' ' + p.tokens + ' tokens' : '') + (p.limit !== undefined ? ' limit ' + p.limit : '');
    if (k.indexOf('channel.') === 0) return '#' + str(p.channel) + (p.topic ? ' ' + p.topic : '');
    var rest = {};
    Object.keys(p).forEach(function (key) { if (key !== 'kind') rest[key] = p[key]; });
    var text = JSON.stringify(rest);
    return text.length > 160 ? text.slice(0, 157) + '…' : text;
  }

  function eventItem(e, extra) {
    var to = e.to_agent ? ' → ' + e.to_agent : '';
    return h('li', Object.assign({
      class: 'ev', tabindex: '0', 'data-position': String(e.position), 'data-kind': e.kind, 'data-channel': e.channel || '',
      title: 'position ' + e.position + ' · ' + e.ts + ' · click: lineage',
      onclick: function () { showLineage(e.position); },
      onkeydown: function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); showLineage(e.position); } },
    }, extra || {}),
      h('span', { class: 'ev-pos', text: '#' + e.position }),
      h('div', { class: 'ev-line' },
        h('span', { class: 'ev-kind', text: e.kind }),
        h('span', { text: (e.actor || '?') + to }),
        e.channel ? h('span', { text: '#' + e.channel }) : null,
        h('span', { class: 'nowrap', text: fmtClock(e.ts) })),
      h('div', { class: 'ev-summary' }, summarize(e)));
  }

  function onStreamEvent(msg) {
    var e = msg.data;
    if (!e || typeof e !== 'object' || e.position === undefined) return;
    var list = $('stream-list');
    // newest first; keep the order by position even when a backfill arrives, and show an event
    // once even when a reconnect delivers it again
    var before = null;
    for (var n = list.firstChild; n; n = n.nextSibling) {
      var at = parseInt(n.getAttribute('data-position'), 10);
      if (at === e.position) return;
      if (at < e.position) { before = n; break; }
    }
    streamCount++;
    var item = eventItem(e, { 'data-testid': 'stream-item' });
    if (e.position > streamFreshAfter) item.classList.add('fresh');
    list.insertBefore(item, before);
    while (list.childNodes.length > STREAM_MAX_ITEMS) list.removeChild(list.lastChild);
    updateStreamCount();
  }

  function updateStreamCount() {
    $('count-stream').textContent = streamCount ? plural(streamCount, 'event') + ' in the stream' : '';
    showStreamStatus();
  }

  var streamState = { kind: 'connecting', detail: '' };

  function setStreamStatus(kind, detail) {
    streamState = { kind: kind, detail: detail || '' };
    if (kind === 'open' && streamFreshAfter === Infinity) streamFreshAfter = lastHead;
    showStreamStatus();
  }

  function showStreamStatus() {
    var el = $('stream-status');
    var f = describeFilter(streamFilter);
    var kind = streamState.kind, detail = streamState.detail;
    el.setAttribute('data-state', kind);
    if (kind === 'open') {
      el.textContent = 'Live: ' + f + (streamCount ? ' · newest first; click an event for its lineage'
        : ' — nothing matched yet; new events appear here as they are appended.');
    } else if (kind === 'down') el.textContent = 'Reconnecting (' + (detail || 'connection lost') + ')…';
    else if (kind === 'refused') el.textContent = 'The server refused this filter: ' + detail;
    else if (kind === 'auth') el.textContent = 'Waiting for the token.';
    else el.textContent = 'Connecting: ' + f + '…';
  }

  function readFilterForm() {
    var form = $('stream-filter');
    var f = {};
    ['kinds', 'actor', 'to_agent', 'channel', 'stream_prefix'].forEach(function (k) { f[k] = form.elements[k].value.trim(); });
    return f;
  }

  function writeFilterForm(f) {
    var form = $('stream-filter');
    ['kinds', 'actor', 'to_agent', 'channel', 'stream_prefix'].forEach(function (k) { form.elements[k].value = f[k] || ''; });
  }

  function applyFilter(f) {
    streamFilter = f;
    streamCount = 0;
    clear($('stream-list'));
    updateStreamCount();
    if (live) openStream(); // else it opens with the first snapshot (from its head, not from 0)
    if (state) renderChannels();
  }

  function openStream() {
    if (!stream) {
      stream = new SseStream(function () {
        var q = filterQuery(streamFilter);
        return '/v1/events' + (q ? '?' + q : '');
      }, onStreamEvent, function (kind, detail) {
        setStreamStatus(kind, detail);
        if (kind === 'open' && !streamCount) { /* shows the waiting hint */ }
      });
    }
    streamFreshAfter = Infinity;
    setStreamStatus('connecting');
    stream.start(Math.max(0, lastHead - STREAM_BACKFILL));
  }

  // --- the whole-log stream that keeps the snapshot fresh ---------------------------------------------
  var logStream = null;

  function openLogStream(since) {
    if (!logStream) {
      logStream = new SseStream(function () { return '/v1/events'; }, function (msg) {
        var e = msg.data;
        if (e && typeof e === 'object' && e.position) {
          lastHead = Math.max(lastHead, e.position);
          var hp = $('head-pos');
          if (hp && (!state || e.position > state.head.position)) {
            hp.textContent = '#' + fmtInt(e.position);
            hp.setAttribute('data-position', String(e.position));
          }
        }
        scheduleRefresh();
      }, function (kind, detail) {
        if (kind === 'open') {
          hideAuth();
          setConn('live', 'live');
          scheduleRefresh(0); // anything appended between the snapshot and the stream's start
        } else if (kind === 'down') setConn('down', 'disconnected — retrying');
        else if (kind === 'auth') setConn('auth', 'token needed');
        else if (kind === 'refused') setConn('down', detail || 'refused');
      });
    }
    logStream.start(since);
  }

  // --- savings -------------------------------------------------------------------------------------------
  function groupName(row) {
    var g = row.group || {};
    var keys = Object.keys(g);
    return keys.length ? keys.map(function (k) { return g[k]; }).join(' · ') : 'total';
  }

  function savingsTable(title, rows, totals, testid, what) {
    if (!rows || !rows.length) {
      return h('div', null, h('h3', { class: 'sub-head', text: title }), h('p', { class: 'muted', 'data-testid': testid + '-empty', text: 'No ' + what + ' yet.' }));
    }
    function tr(r, cls) {
      var neg = r.saved_tokens < 0;
      return h('tr', { class: cls || null, 'data-testid': cls ? null : testid + '-row', 'data-group': groupName(r), 'data-negative': neg ? 'true' : 'false' },
        h('td', { class: 'mono', text: groupName(r) }),
        h('td', { class: 'num', text: fmtInt(r.calls) }),
        h('td', { class: 'num', text: fmtInt(r.raw_tokens) }),
        h('td', { class: 'num', text: fmtInt(r.sent_tokens) }),
        h('td', { class: 'num' + (neg ? ' neg' : ''), title: neg ? 'negative: lean-ctx sent more than the plain tool would have' : null, text: fmtSigned(r.saved_tokens) }),
        h('td', { class: 'num' + (neg ? ' neg' : ''), text: fmtPct(r.savings_pct) }),
        h('td', { class: 'num' + (r.bounces ? ' bounce' : ''), title: r.bounces ? fmtInt(r.wasted_tokens) + ' tokens wasted on re-reads after a stub' : null,
          text: r.bounces ? fmtInt(r.bounces) + ' (' + fmtTokens(r.wasted_tokens) + ')' : '0' }));
    }
    return h('div', null, h('h3', { class: 'sub-head', text: title }),
      h('div', { class: 'table-wrap' }, h('table', { 'data-testid': testid },
        h('thead', null, h('tr', null, ['', 'calls', 'raw', 'sent', 'saved', 'saved %', 'bounces'].map(function (c, i) {
          return h('th', { class: i ? 'num' : null, text: c });
        }))),
        h('tbody', null, rows.map(function (r) { return tr(r); })),
        totals ? h('tfoot', null, tr(Object.assign({}, totals, { group: {} }), 'total')) : null)));
  }

  function savingsChart(sv) {
    var series = sv.series || [];
    var box = $('savings-body');
    var width = Math.max(260, Math.floor((box.clientWidth || 600) - 18));
    var height = 190;
    var padL = 48, padR = 12, padT = 12, padB = 26;
    var cumR = [], cumS = [];
    var r = 0, sn = 0;
    series.forEach(function (p) { r += p.raw_tokens; sn += p.sent_tokens; cumR.push(r); cumS.push(sn); });
    var step = Math.max(1, niceStep(Math.max(1, r, sn) / 4));
    var ymax = Math.max(1, Math.ceil(Math.max(1, r, sn) / step) * step);
    var t0 = series.length ? series[0].t : 0;
    var t1 = series.length ? series[series.length - 1].t + sv.bucket_seconds : 1;
    var span = Math.max(1, t1 - t0);
    function x(t) { return padL + ((t - t0) / span) * (width - padL - padR); }
    function xMid(p) { return x(p.t + sv.bucket_seconds / 2); }
    function y(v) { return padT + (1 - v / ymax) * (height - padT - padB); }
    var svg = s('svg', {
      class: 'chart', 'data-testid': 'savings-chart', 'data-points': String(series.length), viewBox: '0 0 ' + width + ' ' + height,
      width: String(width), height: String(height), role: 'img',
      'aria-label': 'cumulative tokens over time: raw ' + fmtInt(r) + ', sent ' + fmtInt(sn),
    });
    for (var v = 0; v <= ymax + step / 2; v += step) {
      svg.appendChild(s('line', { class: 'grid-line', x1: padL, x2: width - padR, y1: y(v).toFixed(1), y2: y(v).toFixed(1) }));
      svg.appendChild(s('text', { x: padL - 6, y: (y(v) + 3.5).toFixed(1), 'text-anchor': 'end' }, fmtTokens(v)));
    }
    // per-bucket sent tokens as faint bars at the bottom (scaled to the same axis)
    var bw = Math.max(1.5, ((width - padL - padR) * sv.bucket_seconds) / span - 2);
    series.forEach(function (p) {
      var hgt = (height - padT - padB) * (p.sent_tokens / ymax);
      svg.appendChild(s('rect', { class: 'bar-sent', x: (x(p.t) + 1).toFixed(1), y: (height - padB - hgt).toFixed(1), width: bw.toFixed(1), height: Math.max(0, hgt).toFixed(1) },
        s('title', null, fmtClock(new Date(p.t * 1000).toISOString()) + ': ' + fmtInt(p.calls) + ' calls, raw ' + fmtInt(p.raw_tokens) + ', sent ' + fmtInt(p.sent_tokens))));
    });
    var ptsR = series.map(function (p, k) { return xMid(p).toFixed(1) + ',' + y(cumR[k]).toFixed(1); });
    var ptsS = series.map(function (p, k) { return xMid(p).toFixed(1) + ',' + y(cumS[k]).toFixed(1); });
    if (series.length) {
      var area = ptsR.concat(ptsS.slice().reverse());
      svg.appendChild(s('polygon', { class: 'area-saved', points: area.join(' ') }));
    }
    svg.appendChild(s('polyline', { class: 'line-raw', 'data-series': 'raw', 'data-testid': 'chart-line-raw', points: ptsR.join(' ') }));
    svg.appendChild(s('polyline', { class: 'line-sent', 'data-series': 'sent', 'data-testid': 'chart-line-sent', points: ptsS.join(' ') }));
    series.forEach(function (p, k) {
      var when = fmtClock(new Date(p.t * 1000).toISOString());
      svg.appendChild(s('circle', { class: 'pt-raw', cx: xMid(p).toFixed(1), cy: y(cumR[k]).toFixed(1), r: 3 },
        s('title', null, when + ' · raw so far ' + fmtInt(cumR[k]))));
      svg.appendChild(s('circle', { class: 'pt-sent', cx: xMid(p).toFixed(1), cy: y(cumS[k]).toFixed(1), r: 3 },
        s('title', null, when + ' · sent so far ' + fmtInt(cumS[k]))));
    });
    if (series.length) {
      svg.appendChild(s('text', { x: padL, y: height - 8, 'text-anchor': 'start' }, fmtDateTime(new Date(t0 * 1000).toISOString())));
      svg.appendChild(s('text', { x: width - padR, y: height - 8, 'text-anchor': 'end' }, fmtDateTime(new Date(t1 * 1000).toISOString())));
    }
    return svg;
  }

  /** 1, 2, 2.5 or 5 times a power of ten, at least `raw` */
  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-9))));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
  }

  function bucketLabel(sec) {
    if (sec < 60) return sec + ' s';
    if (sec < 3600) return sec / 60 + ' min';
    if (sec < 86400) return sec / 3600 + ' h';
    return sec / 86400 + ' d';
  }

  function renderSavings() {
    var body = $('savings-body');
    var sv = state.savings;
    var t = sv.totals;
    if (!t || !t.calls) {
      $('count-savings').textContent = '';
      fill(body, empty('No savings measured yet', 'Every compressed read and shell command records the tokens a plain tool would have sent (raw) and what lean-ctx sent; bounces (re-reads after a stub) and negative savings show here too.',
        alternatives(['lean-ctx read src/app.py --mode map', 'lean-ctx shell -- git status']), 'empty-savings'));
      return;
    }
    $('count-savings').textContent = fmtInt(t.calls) + ' calls · ' + fmtPct(t.savings_pct) + ' saved';
    var tiles = h('div', { class: 'tiles', 'data-testid': 'savings-totals' },
      h('div', { class: 'tile' }, h('div', { class: 'v', text: fmtInt(t.calls) }), h('div', { class: 'l', text: 'calls' })),
      h('div', { class: 'tile' }, h('div', { class: 'v', 'data-testid': 'total-raw', text: fmtInt(t.raw_tokens) }), h('div', { class: 'l', text: 'raw tokens (plain tools)' })),
      h('div', { class: 'tile' }, h('div', { class: 'v', 'data-testid': 'total-sent', text: fmtInt(t.sent_tokens) }), h('div', { class: 'l', text: 'tokens sent' })),
      h('div', { class: 'tile ' + (t.saved_tokens < 0 ? 'bad' : 'good') }, h('div', { class: 'v', 'data-testid': 'total-saved', text: fmtSigned(t.saved_tokens) }),
        h('div', { class: 'l', text: 'saved (' + fmtPct(t.savings_pct) + ')' })),
      h('div', { class: 'tile' + (t.bounces ? ' warn' : '') }, h('div', { class: 'v', 'data-testid': 'total-bounces', text: fmtInt(t.bounces) }),
        h('div', { class: 'l', text: 'bounces · ' + fmtInt(t.wasted_tokens) + ' tokens wasted' })));
    var chartBox = h('div', { class: 'chart-box' },
      h('div', { class: 'chart-head' },
        h('span', { class: 'legend' },
          h('span', { class: 'legend-item' }, h('span', { class: 'swatch raw' }), 'raw, cumulative'),
          h('span', { class: 'legend-item' }, h('span', { class: 'swatch sent' }), 'sent, cumulative'),
          h('span', { class: 'legend-item' }, h('span', { class: 'swatch saved' }), 'saved'),
          h('span', { class: 'legend-item' }, h('span', { class: 'swatch bar' }), 'sent per bucket')),
        h('span', { text: plural(sv.series.length, 'bucket') + ' of ' + bucketLabel(sv.bucket_seconds) + (sv.encodings && sv.encodings.length ? ' · ' + sv.encodings.join(', ') : '') })),
      savingsChart(sv));
    var tables = h('div', { class: 'savings-tables' },
      savingsTable('By tool', sv.by_tool, t, 'savings-by-tool', 'tool calls'),
      savingsTable('By mode', sv.by_mode, null, 'savings-by-mode', 'reads'),
      savingsTable('By command family', sv.by_family, null, 'savings-by-family', 'shell commands'),
      savingsTable('By agent', sv.by_agent, null, 'savings-by-agent', 'agents'));
    var bounced = null;
    if (sv.bounced_files && sv.bounced_files.length) {
      bounced = h('div', null, h('h3', { class: 'sub-head', text: 'Bounced files (re-read in full after a stub)' }),
        h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'bounced-files' },
          h('thead', null, h('tr', null, h('th', { text: 'path' }), h('th', { text: 'mode' }), h('th', { class: 'num', text: 'bounces' }), h('th', { class: 'num', text: 'wasted' }))),
          h('tbody', null, sv.bounced_files.map(function (b) {
            return h('tr', null, h('td', { class: 'mono', text: b.path }), h('td', { text: b.mode }),
              h('td', { class: 'num bounce', text: fmtInt(b.bounces) }), h('td', { class: 'num neg', text: fmtInt(b.wasted_tokens) }));
          })))));
    }
    fill(body, tiles, chartBox, tables, bounced);
  }

  // --- proofs ----------------------------------------------------------------------------------------------
  var proofNote = null; // { text, bad } after an action
  var proofBusy = false; // an action is under way: its buttons stay disabled through re-renders

  function renderProof() {
    var body = $('proof-body');
    var info = state.proof;
    var actions = h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'btn', 'data-testid': 'proof-create', onclick: createProof, disabled: proofBusy }, 'Create proof'),
      info ? h('button', { type: 'button', class: 'btn btn-ghost', 'data-testid': 'proof-verify', onclick: verifyProof, disabled: proofBusy }, 'Verify') : null,
      proofNote ? h('span', { class: 'action-note' + (proofNote.bad ? ' neg' : ''), 'data-testid': 'proof-note', role: 'status', text: proofNote.text }) : null);
    if (!info) {
      $('count-proof').textContent = '';
      fill(body, empty('No Context Proof yet', 'A Context Proof is a signed summary of the log (head, hash chain, event counts, projection digests, savings) that anyone holding the log can re-derive and verify.',
        ['lean-ctx proof', 'lean-ctx proof verify FILE'], 'empty-proof'), actions);
      return;
    }
    var v = info.verification;
    var vbadge = v === null || v === undefined
      ? h('span', { class: 'badge pv-none', 'data-testid': 'proof-verification', 'data-verified': 'none', text: 'not verified yet' })
      : v.verified
        ? h('span', { class: 'badge pv-ok', 'data-testid': 'proof-verification', 'data-verified': 'true', text: '✓ verified ' + fmtDateTime(v.verified_at) })
        : h('span', { class: 'badge pv-failed', 'data-testid': 'proof-verification', 'data-verified': 'false', text: '✗ verification failed ' + fmtDateTime(v.verified_at) });
    var chain = info.chain_ok === null || info.chain_ok === undefined ? null
      : h('span', { class: 'badge ' + (info.chain_ok ? 'pv-ok' : 'pv-failed'), text: info.chain_ok ? 'hash chain ok' : 'hash chain BROKEN' });
    var behind = state && info.head && state.head.position > info.head.position
      ? h('span', { class: 'tag', title: 'the log has grown since this proof', text: (state.head.position - info.head.position) + ' events newer' }) : null;
    $('count-proof').textContent = 'head #' + info.head.position;
    var signer = info.signer || {};
    fill(body,
      h('div', { class: 'proof-state' }, vbadge, chain, behind),
      h('dl', { class: 'kv', 'data-testid': 'proof-details' },
        h('dt', { text: 'file' }), h('dd', null, h('span', { class: 'mono', 'data-testid': 'proof-file', text: info.file }),
          info.html && !getToken() ? [' ', h('a', { href: '/v1/proof/html?file=' + encodeURIComponent(info.html), target: '_blank', rel: 'noopener', text: 'page' })] : null),
        h('dt', { text: 'head' }), h('dd', null, h('button', { type: 'button', class: 'linkish', text: '#' + info.head.position, onclick: function () { showLineage(info.head.position); } }),
          ' ', h('span', { class: 'mono muted', title: info.head.hash || '', text: shortHash(info.head.hash) })),
        h('dt', { text: 'events' }), h('dd', { text: fmtInt(info.events_total) }),
        h('dt', { text: 'generated' }), h('dd', { text: fmtDateTime(info.generated_at) }),
        h('dt', { text: 'signed by' }), h('dd', null, signer.key_id ? signer.key_id + ' ' : '', h('span', { class: 'mono muted', text: signer.fingerprint || '–' }))),
      v && !v.verified && v.differences && v.differences.length ? h('ul', { class: 'diffs', 'data-testid': 'proof-differences' },
        v.differences.map(function (d) { return h('li', { text: '[' + d.code + '] ' + (d.field || '-') + ': ' + d.message }); })) : null,
      actions);
  }

  function proofAction(path, body, busyText, done) {
    if (proofBusy) return Promise.resolve();
    proofBusy = true;
    proofNote = { text: busyText, bad: false };
    renderProof();
    return api(path, { method: 'POST', body: body }).then(function (res) {
      proofNote = done(res);
    }, function (e) {
      proofNote = { text: e.message + (e.code ? ' (' + e.code + ')' : ''), bad: true };
    }).then(function () {
      proofBusy = false;
      return refresh();
    }).then(function () { if (state) renderProof(); });
  }

  function createProof() {
    return proofAction('/v1/proof', {}, 'creating a proof (replaying the log)…', function (res) {
      return { text: 'created ' + res.file + ' at head #' + (res.head ? res.head.position : '?'), bad: false };
    });
  }

  function verifyProof() {
    var info = state && state.proof;
    return proofAction('/v1/proof/verify', info ? { file: info.file } : {}, 'verifying (replaying the log)…', function (res) {
      return res.ok ? { text: 'verified: every figure re-derived from the log', bad: false }
        : { text: 'FAILED: ' + plural((res.differences || []).length, 'difference'), bad: true };
    });
  }

  // --- events: search and lineage ----------------------------------------------------------------------
  var searchSeq = 0;

  function runSearch(q) {
    var out = $('search-results');
    var seq = ++searchSeq; // only the latest search may fill the results
    q = (q || '').trim();
    if (!q) { fill(out, searchHint()); return; }
    fill(out, h('p', { class: 'muted', text: 'searching…' }));
    api('/v1/events/search?q=' + encodeURIComponent(q) + '&limit=50').then(function (res) {
      if (seq !== searchSeq) return;
      if (!res.hits.length) {
        fill(out, h('p', { class: 'muted', 'data-testid': 'search-none', text: 'Nothing in the log matches “' + q + '”.' }));
        return;
      }
      fill(out, h('p', { class: 'muted', text: plural(res.hits.length, 'hit') + ', best first; click one for its lineage' }),
        h('ol', { class: 'hits', 'data-testid': 'search-hits' }, res.hits.map(function (hit) {
          var item = eventItem(hit.event, { 'data-testid': 'search-hit' });
          item.querySelector('.ev-line').appendChild(h('span', { class: 'hit-score', title: 'bm25 score', text: hit.score.toFixed(2) }));
          return item;
        })));
    }, function (e) {
      if (seq !== searchSeq) return;
      fill(out, h('p', { class: 'error-inline', 'data-testid': 'search-error', text: e.message + (e.code ? ' (' + e.code + ')' : '') }));
    });
  }

  function searchHint() {
    return empty('Search the whole log', 'Full-text (FTS5, bm25-ranked) over kinds, streams, agents, channels and payload text; any text is a safe query.',
      alternatives(['race lock', 'task.claimed', 'README.md']), 'empty-search');
  }

  var lineageSeq = 0;

  function showLineage(position) {
    position = parseInt(position, 10);
    var view = $('lineage-view');
    if (!(position >= 1)) { fill(view, h('p', { class: 'error-inline', text: 'Give a log position (1 or more).' })); return; }
    $('lineage-pos').value = String(position);
    var seq = ++lineageSeq;
    fill(view, h('p', { class: 'muted', text: 'loading the chain of #' + position + '…' }));
    var panel = $('panel-events');
    api('/v1/events/lineage/' + position).then(function (res) {
      if (seq !== lineageSeq) return;
      drawLineage(res);
      if (panel && panel.getBoundingClientRect().top > window.innerHeight) panel.scrollIntoView({ block: 'start' });
    }, function (e) {
      if (seq !== lineageSeq) return;
      fill(view, h('p', { class: 'error-inline', 'data-testid': 'lineage-error', text: e.message + (e.code ? ' (' + e.code + ')' : '') }));
    });
  }

  function node(e, role, depth) {
    var cls = 'node ' + role + (depth > 1 ? ' depth-deep' : '');
    var el = h('li', {
      class: cls, tabindex: '0', 'data-testid': 'lineage-node', 'data-role': role, 'data-position': String(e.position), 'data-kind': e.kind,
      'data-depth': String(depth), title: role === 'focus' ? 'this event' : 'click: center the explorer on #' + e.position,
      onclick: function () { if (role !== 'focus') showLineage(e.position); },
      onkeydown: function (ev) { if ((ev.key === 'Enter' || ev.key === ' ') && role !== 'focus') { ev.preventDefault(); showLineage(e.position); } },
    },
      h('div', { class: 'node-top' },
        h('span', { class: 'node-role', text: role === 'ancestor' ? 'cause' : role === 'focus' ? 'event' : 'effect' }),
        h('span', { class: 'node-pos', text: '#' + e.position }),
        h('span', { class: 'node-kind', text: e.kind })),
      h('div', { class: 'node-meta' },
        h('span', { text: (e.actor || '?') + (e.to_agent ? ' → ' + e.to_agent : '') }),
        h('span', { class: 'mono', text: e.stream }),
        h('span', { text: fmtClock(e.ts) }),
        e.causation_id ? h('span', { text: 'caused by #' + e.causation_id }) : null),
      h('div', { class: 'node-summary' }, summarize(e)));
    if (depth > 0) el.style.marginLeft = Math.min(depth - 1, 6) * 22 + 'px';
    return el;
  }

  function drawLineage(res) {
    var view = $('lineage-view');
    var e = res.event;
    var anc = (res.ancestors || []).slice().sort(function (a, b) { return a.position - b.position; });
    var des = (res.descendants || []).slice().sort(function (a, b) { return a.position - b.position; });
    var depth = {};
    depth[e.position] = 0;
    des.forEach(function (d) { depth[d.position] = (depth[d.causation_id] !== undefined ? depth[d.causation_id] : 0) + 1; });
    var chain = h('ol', { class: 'chain', 'data-testid': 'lineage-chain', 'aria-label': 'causation chain of #' + e.position });
    anc.forEach(function (a) { chain.appendChild(node(a, 'ancestor', 0)); });
    chain.appendChild(node(e, 'focus', 0));
    des.forEach(function (d) { chain.appendChild(node(d, 'descendant', depth[d.position])); });
    var payload = JSON.stringify(e, null, 2);
    fill(view,
      h('p', { class: 'muted', 'data-testid': 'lineage-summary', text: '#' + e.position + ' ' + e.kind + ': ' + plural(anc.length, 'cause') + ' above, ' + plural(des.length, 'effect') + ' below' +
        (e.correlation_id ? ' · correlation ' + String(e.correlation_id).slice(0, 12) : '') }),
      chain,
      h('details', { class: 'payload' }, h('summary', { text: 'the event as stored (#' + e.position + ')' }), h('pre', { text: payload })));
  }

  function lineageHint() {
    return empty('Pick an event', 'Click any event (in the stream, in search results, or the head position above) or give a position: its causes are drawn above it and its effects below, down to the events its tool call appended.',
      'lean-ctx events lineage 42', 'empty-lineage');
  }

  // --- live ticking -----------------------------------------------------------------------------------------
  function tick() {
    if (!state) return;
    var dt = elapsed();
    document.querySelectorAll('.js-countdown').forEach(function (el) {
      var rem = parseFloat(el.getAttribute('data-remaining')) - dt;
      var prefix = el.getAttribute('data-prefix');
      el.textContent = rem > 0 ? (prefix ? prefix + ' ' : '') + fmtDuration(rem) : (prefix ? prefix + ' ' : '') + 'expired';
      el.classList.toggle('low', rem > 0 && rem < 60);
      el.classList.toggle('gone', rem <= 0);
    });
    document.querySelectorAll('.js-age').forEach(function (el) {
      el.textContent = 'heartbeat ' + fmtAgo(parseFloat(el.getAttribute('data-age')) + dt);
    });
    tickScent(false);
  }

  // --- everything --------------------------------------------------------------------------------------------
  /** A selector for the focused element when a re-render is about to replace it (a channel chip,
   * a proof button), so that keyboard focus survives the refresh. */
  function focusKey() {
    var el = document.activeElement;
    var id = el && el !== document.body ? el.getAttribute('data-testid') : null;
    if (!id || !$('main').contains(el)) return null;
    var ch = el.getAttribute('data-channel');
    return '[data-testid="' + id + '"]' + (ch !== null ? '[data-channel="' + CSS.escape(ch) + '"]' : '');
  }

  function render() {
    if (!state) return;
    var focused = focusKey();
    renderHeader();
    renderAgents();
    renderScent();
    renderTasks();
    renderChannels();
    renderSavings();
    renderProof();
    if (focused) {
      var again = document.querySelector(focused);
      if (again && again !== document.activeElement && !again.disabled) again.focus();
    }
    root.setAttribute('data-loaded', 'true');
    root.setAttribute('data-head', String(state.head.position));
  }

  /** After the first snapshot, and again after a new token: both streams from its head. */
  function goLive() {
    live = true;
    openLogStream(state.head.position);
    openStream();
  }

  function restart() {
    if (logStream) logStream.stop();
    if (stream) stream.stop();
    live = false;
    setConn('connecting', 'connecting…');
    refresh();
  }

  function init() {
    $('theme-toggle').addEventListener('click', toggleTheme);
    applyTheme();
    fill($('search-results'), searchHint());
    fill($('lineage-view'), lineageHint());
    $('search-form').addEventListener('submit', function (ev) { ev.preventDefault(); runSearch($('search-q').value); });
    $('lineage-form').addEventListener('submit', function (ev) { ev.preventDefault(); showLineage($('lineage-pos').value); });
    $('head-pos').addEventListener('click', function () {
      var p = parseInt($('head-pos').getAttribute('data-position'), 10);
      if (p >= 1) showLineage(p);
    });
    $('stream-filter').addEventListener('submit', function (ev) { ev.preventDefault(); applyFilter(readFilterForm()); });
    $('filter-all').addEventListener('click', function () { writeFilterForm({}); applyFilter({}); });
    $('filter-reset').addEventListener('click', function () { var f = { kinds: 'message.*' }; writeFilterForm(f); applyFilter(f); });
    $('auth-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var v = $('auth-token').value.trim();
      if (!v) return;
      setToken(v);
      $('auth-token').value = '';
      restart();
    });
    window.addEventListener('hashchange', function () { if (takeTokenFromHash()) restart(); });
    var resizeTimer = null;
    window.addEventListener('resize', function () {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(function () { if (state) renderSavings(); }, 150);
    });
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && hiddenStale) { hiddenStale = false; scheduleRefresh(0); }
    });
    streamFilter = readFilterForm();
    setInterval(tick, 1000);
    setInterval(function () { if (live && !authNeeded) scheduleRefresh(0); }, PERIODIC_REFRESH_MS);
    refresh();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
