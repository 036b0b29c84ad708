// uwf viewer: keeps pages live and calls the API's mutations.
//
// Rules this file keeps: text from the store is never turned into HTML
// here. Messages go in with textContent; the only markup inserted is a
// fragment the server rendered (html/template, sanitised markdown), parsed
// with DOMParser (whose scripts never run) and moved in as nodes. The page's
// Content-Security-Policy allows no inline script and no eval.
(function () {
  'use strict';

  var KEY = 'uwf-token';

  // The token arrives in the URL fragment (#token=...), which no server
  // sees or logs; keep it for this tab and take it out of the address bar.
  function takeToken() {
    if (location.hash.length < 2) return;
    var params = new URLSearchParams(location.hash.slice(1));
    var t = params.get('token');
    if (!t) return;
    sessionStorage.setItem(KEY, t);
    params.delete('token');
    var rest = params.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  }

  function token() { return sessionStorage.getItem(KEY) || ''; }

  function $(sel, root) { return (root || document).querySelector(sel); }

  function flash(msg, ok) {
    var el = $('#flash');
    if (!el) return;
    el.textContent = msg;
    el.className = ok ? 'flash ok' : 'flash';
    el.hidden = false;
    clearTimeout(flash.timer);
    if (ok) flash.timer = setTimeout(function () { el.hidden = true; }, 4000);
  }

  // api calls the JSON API with the token; it rejects with the server's
  // message on a status other than 2xx.
  function api(method, path, body) {
    var headers = { 'Accept': 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    var t = token();
    if (t) headers['Authorization'] = 'Bearer ' + t;
    return fetch(path, {
      method: method, headers: headers, credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (res) {
      return res.text().then(function (txt) {
        var data = null;
        try { data = txt ? JSON.parse(txt) : null; } catch (e) { data = null; }
        if (!res.ok) {
          var msg = (data && (data.error || data.message)) || txt || res.statusText;
          if (res.status === 401 && !t) msg = 'This needs the token: open the address `uwf serve` printed (it ends in #token=...). ' + msg;
          throw new Error(res.status + ': ' + msg);
        }
        return data;
      });
    });
  }

  // threadOf finds the thread id in an API answer.
  function threadOf(data) {
    if (!data) return '';
    var keys = ['id', 'thread', 'ID', 'Thread', 'fork'];
    for (var i = 0; i < keys.length; i++) {
      var v = data[keys[i]];
      if (typeof v === 'string' && /^[0-9A-HJKMNP-TV-Z]{26}$/.test(v)) return v;
      if (v && typeof v === 'object') { var w = threadOf(v); if (w) return w; }
    }
    return '';
  }

  function gotoThread(id) { location.href = '/threads/' + encodeURIComponent(id); }

  // A fork with an edit: the step's output, edited as JSON, becomes the
  // fork's step at that depth.
  function forkEdit(form) {
    var page = $('#thread');
    var output;
    try { output = JSON.parse(form.elements.output.value); } catch (e) {
      flash('The output is not JSON: ' + e.message, false);
      return;
    }
    var id = page.getAttribute('data-thread');
    api('POST', '/api/v1/threads/' + encodeURIComponent(id) + '/fork', { at: Number(form.getAttribute('data-at')), output: output })
      .then(function (data) { var f = threadOf(data); if (f) gotoThread(f); else flash('Forked.', true); })
      .catch(function (err) { flash(err.message, false); });
  }

  // Forms with data-api="METHOD /path" send their fields as JSON.
  function onSubmit(ev) {
    var form = ev.target;
    if (form.classList && form.classList.contains('fork-edit')) { ev.preventDefault(); forkEdit(form); return; }
    var spec = form.getAttribute && form.getAttribute('data-api');
    if (!spec) return;
    ev.preventDefault();
    var ask = form.getAttribute('data-confirm');
    if (ask && !confirm(ask)) return;
    var parts = spec.split(' ');
    var body = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name) return;
      // A checkbox is a boolean: sent as true when ticked ("queue").
      if (el.type === 'checkbox') { if (el.checked) body[el.name] = true; return; }
      if (el.value === '') return;
      body[el.name] = el.type === 'number' ? Number(el.value) : el.value;
    });
    var btn = form.querySelector('button');
    if (btn) btn.disabled = true;
    api(parts[0], parts[1], body).then(function (data) {
      if (form.getAttribute('data-done') === 'thread') {
        var id = threadOf(data);
        if (id) { gotoThread(id); return; }
      }
      flash('Done.', true);
      refresh();
    }).catch(function (err) {
      flash(err.message, false);
    }).then(function () { if (btn) btn.disabled = false; syncActions(); });
  }

  function onClick(ev) {
    var b = ev.target.closest && ev.target.closest('.fork-here');
    if (!b) return;
    var page = $('#thread');
    if (!page) return;
    var id = page.getAttribute('data-thread');
    api('POST', '/api/v1/threads/' + encodeURIComponent(id) + '/fork', { at: Number(b.getAttribute('data-at')) })
      .then(function (data) { var f = threadOf(data); if (f) gotoThread(f); else flash('Forked.', true); })
      .catch(function (err) { flash(err.message, false); });
  }

  // parse turns a fragment the server rendered into a detached document.
  function parse(html) { return new DOMParser().parseFromString(html, 'text/html'); }

  function moveChildren(from, to) {
    while (to.firstChild) to.removeChild(to.firstChild);
    if (!from) return;
    while (from.firstChild) to.appendChild(document.adoptNode(from.firstChild));
  }

  function getText(url) {
    return fetch(url, { credentials: 'same-origin' }).then(function (res) {
      if (!res.ok) throw new Error(res.status + ' ' + res.statusText + ': ' + url);
      return res.text();
    });
  }

  // Details with data-src load their content the first time they open.
  function onToggle(ev) {
    var d = ev.target;
    if (!d.matches || !d.matches('details.lazy') || !d.open || d.getAttribute('data-loaded')) return;
    d.setAttribute('data-loaded', '1');
    getText(d.getAttribute('data-src')).then(function (html) {
      moveChildren(parse(html).body, $('.slot', d));
    }).catch(function (err) { $('.slot', d).textContent = err.message; });
  }

  // refresh fetches the live part of the page again: the list, or the
  // thread's header and its new entries.
  var busy = false, again = false;
  function refresh() {
    var live = $('[data-frag]');
    if (!live) return;
    if (busy) { again = true; return; }
    busy = true;
    var url = live.getAttribute('data-frag');
    var tl = $('#timeline');
    if (tl) {
      var last = tl.lastElementChild;
      url += '?after=' + (last ? last.getAttribute('data-depth') : '0');
    }
    getText(url).then(function (html) {
      var doc = parse(html);
      if (!tl) { moveChildren(doc.body, live); return; }
      var frag = $('#frag', doc);
      if (!frag || frag.getAttribute('data-gap') === 'true') { location.reload(); return; }
      moveChildren($('#frag-head', doc), $('#thread-head'));
      syncActions();
      moveChildren($('#frag-graph', doc), $('#graph'));
      var items = $('#frag-entries', doc);
      while (items && items.firstElementChild) {
        var li = document.adoptNode(items.firstElementChild);
        li.classList.add('new');
        tl.appendChild(li);
      }
    }).catch(function (err) {
      flash(err.message, false);
    }).then(function () {
      busy = false;
      if (again) { again = false; refresh(); }
    });
  }

  // syncActions enables the thread's buttons for its status (the header
  // is fetched again; the forms are not, so what the user typed stays).
  function syncActions() {
    var h = $('#thread-head [data-status]');
    var acts = $('#actions');
    if (!h || !acts) return;
    var st = h.getAttribute('data-status'), depth = h.getAttribute('data-depth');
    var can = {
      step: st === 'active', suspend: st === 'active', resume: st === 'suspended', kill: st === 'active' || st === 'suspended', fork: true
    };
    Array.prototype.forEach.call(acts.querySelectorAll('form[data-api]'), function (f) {
      var verb = f.getAttribute('data-api').split('/').pop();
      var b = f.querySelector('button');
      if (b && verb in can) b.disabled = !can[verb];
    });
    var at = acts.querySelector('input[name=at]');
    if (at && depth !== null) at.max = depth;
  }

  // follow listens to the events stream and refreshes when a ref the page
  // watches moves.
  function follow() {
    var live = $('[data-frag]');
    var status = $('#live');
    if (!live || !window.EventSource) return;
    var watch = live.getAttribute('data-watch') || '';
    var id = watch.indexOf('threads/') === 0 ? watch.slice('threads/'.length) : '';
    if (status) { status.hidden = false; status.textContent = 'connecting'; }
    // Beyond loopback the stream needs the session cookie; on loopback
    // the call is harmless. Either way the stream opens after it.
    var ready = token() ? api('POST', '/api/v1/session').catch(function () {}) : Promise.resolve();
    ready.then(function () { open(); });
    function open() {
    var es = new EventSource('/api/v1/events' + (id ? '?thread=' + encodeURIComponent(id) : ''));
    var timer = null;
    function onEvent(ev) {
      var data = String(ev.data || '');
      // A thread's ref, its failure's or its run record's (a worker
      // claiming, stepping or releasing it) moved.
      if (id ? data.indexOf(id) < 0 : !/"ref":"(threads|failures|runs)\//.test(data)) return;
      clearTimeout(timer);
      timer = setTimeout(refresh, 150);
    }
    es.onmessage = onEvent;
    // This server's own step loops say which role is running.
    es.addEventListener('progress', function (ev) {
      var el = $('#running'), p = null;
      try { p = JSON.parse(ev.data); } catch (e) { return; }
      if (!el || !id || !p || p.thread !== id) return;
      el.hidden = p.type !== 'running';
      el.textContent = p.type === 'running' ? String(p.role || '') + ' is running (' + String(p.agent || '') + ')…' : '';
    });
    ['ref', 'move', 'thread', 'step', 'update'].forEach(function (n) { es.addEventListener(n, onEvent); });
    // What moved between rendering the page and opening the stream is
    // not in the stream: fetch the live part once it is open (and after
    // every reconnection, which resumes from the last id anyway).
    es.onopen = function () {
      if (status) { status.textContent = 'live'; status.className = 'live on'; }
      refresh();
    };
    es.onerror = function () { if (status) { status.textContent = 'reconnecting'; status.className = 'live'; } };
    }
  }

  function showAuth() {
    var auth = $('#auth');
    if (auth) auth.textContent = token() ? 'token set' : 'read-only';
  }

  function init() {
    takeToken();
    showAuth();
    window.addEventListener('hashchange', function () { takeToken(); showAuth(); });
    document.addEventListener('submit', onSubmit);
    document.addEventListener('click', onClick);
    // The list's filters apply as soon as they change.
    document.addEventListener('change', function (ev) {
      var f = ev.target.form;
      if (f && f.classList.contains('filters')) f.submit();
    });
    document.addEventListener('toggle', onToggle, true);
    follow();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
