'use strict';
var failures = [];
window.addEventListener('error', function (e) {
  failures.push(String(e.message));
  document.body.setAttribute('data-errors', String(failures.length));
  document.getElementById('errors').textContent = failures.join('; ');
});
function data(id) { return JSON.parse(document.getElementById(id).textContent); }
/* A block that may be absent (the baseline's, the profile): null then. */
function maybe(id) { var e = document.getElementById(id); return e ? JSON.parse(e.textContent) : null; }
function fmtBytes(v) {
  if (v === null || v === undefined || isNaN(v)) return '-';
  if (v < 1e3) return v.toFixed(0) + ' B';
  if (v < 1e6) return (v / 1e3).toFixed(1) + ' kB';
  if (v < 1e9) return (v / 1e6).toFixed(2) + ' MB';
  return (v / 1e9).toFixed(2) + ' GB';
}
function fmtPct(v) { return v === null || isNaN(v) ? '-' : v.toFixed(v < 10 ? 1 : 0) + '%'; }
var NS = 'http://www.w3.org/2000/svg';
var COLORS = ['#2f6fdf', '#e8743b', '#19a979', '#ed4a7b', '#945ecf', '#13a4b4', '#525df4', '#bf399e', '#6c8893', '#ee6868'];
function el(name, attrs, parent) {
  var e = document.createElementNS(NS, name);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function text(parent, x, y, s, anchor, cls) {
  var t = el('text', {x: x, y: y, 'text-anchor': anchor || 'start', 'class': cls || 'tick'}, parent);
  t.textContent = s;
  return t;
}
function fmtUs(us) {
  if (us === null || us === undefined || isNaN(us)) return '-';
  if (us < 1) return (us * 1000).toFixed(0) + 'ns';
  if (us < 100) return us.toFixed(1) + 'us';
  if (us < 1000) return us.toFixed(0) + 'us';
  if (us < 100000) return (us / 1000).toFixed(2) + 'ms';
  if (us < 1000000) return (us / 1000).toFixed(1) + 'ms';
  return (us / 1000000).toFixed(2) + 's';
}
function fmtNum(v) {
  if (v === null || v === undefined || isNaN(v)) return '-';
  var a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(2) + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  if (a >= 100 || v === Math.round(v)) return v.toFixed(0);
  return v.toPrecision(3);
}
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) hi = lo + 1;
  var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
  var err = (hi - lo) / n / step;
  if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
  var t = [], v = Math.ceil(lo / step) * step;
  for (; v <= hi + step * 1e-9; v += step) t.push(v);
  return t;
}
/*
 * A chart of lines over x: opts.series [{name, y: [..], color, dash}], opts.logY,
 * opts.fmtY, opts.fmtX, opts.xs (values of x), opts.xLog (x as given is
 * already a log position, opts.xLabels [[pos, label]]).  Draws into the
 * svg with id; sets its data-points to the points of its longest line.
 */
function chart(id, opts) {
  var svg = document.getElementById(id);
  var W = 720, H = 260, L = 64, R = 12, T = 12, B = 30;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  var xs = opts.xs, series = opts.series.filter(function (s) {
    return s.y.some(function (v) { return v !== null && !isNaN(v); });
  });
  /* A series may have its own x values (s.x), else opts.xs. */
  var allx = [];
  series.forEach(function (s) { allx = allx.concat(s.x || xs); });
  /* The run's own points: a baseline's (dashed) do not count. */
  var points = 0;
  series.forEach(function (s) {
    if (!s.dash || series.every(function (o) { return o.dash; }))
      points = Math.max(points, s.y.filter(function (v) { return v !== null && !isNaN(v); }).length);
  });
  svg.setAttribute('data-points', String(points));
  if (points === 0) {
    text(svg, W / 2, H / 2, opts.empty || 'nothing measured', 'middle', 'empty');
    return;
  }
  var ymin = Infinity, ymax = -Infinity;
  series.forEach(function (s) {
    s.y.forEach(function (v) {
      if (v === null || isNaN(v) || (opts.logY && v <= 0)) return;
      ymin = Math.min(ymin, v); ymax = Math.max(ymax, v);
    });
  });
  if (!isFinite(ymin)) { ymin = 0; ymax = 1; }
  if (!opts.logY) ymin = Math.min(0, ymin);
  var xmin = opts.x0 !== undefined ? opts.x0 : Math.min.apply(null, allx),
      xmax = Math.max.apply(null, allx);
  if (xmax === xmin) xmax = xmin + 1;
  var fy, ticks;
  if (opts.logY) {
    var lo = Math.floor(Math.log10(ymin)), hi = Math.ceil(Math.log10(ymax));
    if (hi === lo) hi = lo + 1;
    fy = function (v) { return T + (H - T - B) * (1 - (Math.log10(v) - lo) / (hi - lo)); };
    ticks = [];
    for (var e = lo; e <= hi; e++) ticks.push(Math.pow(10, e));
  } else {
    ticks = niceTicks(ymin, ymax, 5);
    var top = Math.max(ymax, ticks[ticks.length - 1]);
    fy = function (v) { return T + (H - T - B) * (1 - (v - ymin) / (top - ymin || 1)); };
  }
  var fx = function (v) { return L + (W - L - R) * (v - xmin) / (xmax - xmin); };
  var g = el('g', {'class': 'grid'}, svg);
  ticks.forEach(function (v) {
    var y = fy(v);
    if (y < T - 1 || y > H - B + 1) return;
    el('line', {x1: L, x2: W - R, y1: y, y2: y}, g);
    text(svg, L - 6, y + 4, (opts.fmtY || fmtNum)(v), 'end');
  });
  /* A label at either end is drawn inside the chart, never cut. */
  var xlabel = function (x, s) {
    var anchor = x > W - R - 30 ? 'end' : x < L + 30 ? 'start' : 'middle';
    text(svg, anchor === 'end' ? Math.min(x, W - 2) : x, H - B + 16, s, anchor);
  };
  if (opts.xLabels) {
    opts.xLabels.forEach(function (p) {
      if (p[0] < xmin || p[0] > xmax + 1e-9) return;
      el('line', {x1: fx(p[0]), x2: fx(p[0]), y1: T, y2: H - B}, g);
      xlabel(fx(p[0]), p[1]);
    });
  } else {
    niceTicks(xmin, xmax, 8).forEach(function (v) {
      xlabel(fx(v), (opts.fmtX || fmtNum)(v));
    });
  }
  el('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, 'class': 'axis'}, svg);
  series.forEach(function (s, i) {
    var d = '', pen = false, sx = s.x || xs;
    s.y.forEach(function (v, k) {
      var ok = v !== null && !isNaN(v) && !(opts.logY && v <= 0);
      if (!ok) { pen = false; return; }
      d += (pen ? 'L' : 'M') + fx(sx[k]).toFixed(1) + ' ' + fy(v).toFixed(1);
      pen = true;
    });
    var path = el('path', {d: d, 'class': s.dash ? 'line dash' : 'line', stroke: s.color || COLORS[i % COLORS.length]}, svg);
    path.setAttribute('data-name', s.name);
    /* How far right the line goes, in x's units: for the tests. */
    path.setAttribute('data-last-x', String(Math.max.apply(null, sx.filter(function (v, k) {
      return s.y[k] !== null && !isNaN(s.y[k]);
    }))));
    if (s.y.filter(function (v) { return v !== null && !isNaN(v); }).length === 1) {
      s.y.forEach(function (v, k) {
        if (v !== null && !isNaN(v))
          el('circle', {cx: fx(sx[k]), cy: fy(v), r: 3, fill: s.color || COLORS[i % COLORS.length]}, svg);
      });
    }
  });
  var legend = document.getElementById(id + '-legend');
  if (legend) {
    legend.innerHTML = '';
    series.forEach(function (s, i) {
      var item = document.createElement('span');
      item.className = 'key';
      var sw = document.createElement('i');
      sw.style.background = s.color || COLORS[i % COLORS.length];
      if (s.dash) { sw.className = 'dash'; sw.style.borderColor = s.color || COLORS[i % COLORS.length]; }
      item.appendChild(sw);
      item.appendChild(document.createTextNode(s.name));
      legend.appendChild(item);
    });
  }
  /* A crosshair and the values under it. */
  var cross = el('line', {y1: T, y2: H - B, 'class': 'cross', visibility: 'hidden'}, svg);
  var tip = document.getElementById('tip');
  svg.addEventListener('mousemove', function (ev) {
    var box = svg.getBoundingClientRect();
    var x = xmin + ((ev.clientX - box.left) * W / box.width - L) / (W - L - R) * (xmax - xmin);
    var near = function (sx) {
      var k = 0;
      sx.forEach(function (v, j) { if (Math.abs(v - x) < Math.abs(sx[k] - x)) k = j; });
      return k;
    };
    var x0 = series[0].x || xs, k0 = near(x0);
    cross.setAttribute('x1', fx(x0[k0])); cross.setAttribute('x2', fx(x0[k0]));
    cross.setAttribute('visibility', 'visible');
    var lines = [(opts.fmtXTip || opts.fmtX || fmtNum)(x0[k0])];
    series.forEach(function (s) { lines.push(s.name + ': ' + (opts.fmtY || fmtNum)(s.y[near(s.x || xs)])); });
    tip.textContent = lines.join('\n');
    tip.style.display = 'block';
    tip.style.left = (ev.pageX + 14) + 'px';
    tip.style.top = (ev.pageY + 14) + 'px';
  });
  svg.addEventListener('mouseleave', function () {
    cross.setAttribute('visibility', 'hidden');
    tip.style.display = 'none';
  });
}
/* Horizontal bars: [[label, value, note]]. */
function bars(id, rows) {
  var svg = document.getElementById(id);
  var W = 720, row = 26, L = 230, H = Math.max(1, rows.length) * row + 10;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.setAttribute('data-points', String(rows.length));
  if (rows.length === 0) {
    svg.setAttribute('viewBox', '0 0 ' + W + ' 40');
    text(svg, W / 2, 24, 'no errors', 'middle', 'empty');
    return;
  }
  var max = Math.max.apply(null, rows.map(function (r) { return r[1]; }));
  rows.forEach(function (r, i) {
    var y = 5 + i * row;
    text(svg, L - 8, y + 16, r[0], 'end', 'label');
    el('rect', {x: L, y: y + 3, height: row - 8, width: Math.max(1, (W - L - 120) * r[1] / max), 'class': r[2] ? 'bar expected' : 'bar'}, svg);
    text(svg, L + (W - L - 120) * r[1] / max + 6, y + 16, fmtNum(r[1]) + (r[2] ? ' (' + r[2] + ')' : ''), 'start', 'label');
  });
}
function cell(tr, v, cls) {
  var td = document.createElement(tr.parentNode && tr.parentNode.tagName === 'THEAD' ? 'th' : 'td');
  td.textContent = v;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}
function table(id, head, rows) {
  var t = document.getElementById(id);
  t.innerHTML = '';
  var th = document.createElement('thead'), tb = document.createElement('tbody');
  t.appendChild(th); t.appendChild(tb);
  var tr = document.createElement('tr');
  th.appendChild(tr);
  head.forEach(function (h) { cell(tr, h); });
  rows.forEach(function (r) {
    var tr2 = document.createElement('tr');
    tb.appendChild(tr2);
    r.forEach(function (v, i) { cell(tr2, v, i > 0 ? 'num' : ''); });
  });
  t.setAttribute('data-rows', String(rows.length));
}
function tile(label, value, cls) {
  var d = document.createElement('div');
  d.className = 'tile' + (cls ? ' ' + cls : '');
  var v = document.createElement('b'); v.textContent = value;
  var l = document.createElement('span'); l.textContent = label;
  d.appendChild(v); d.appendChild(l);
  document.getElementById('tiles').appendChild(d);
}
/* A spectrum's points (older reports: a bare array) and answers. */
function specLine(x) { return Array.isArray(x) ? {n: 0, pts: x} : x; }
function draw() {
  var sum = data('data-summary'), ser = data('data-series'), spec = data('data-spectrum'), set = data('data-settings');
  var prof = maybe('data-profile');
  var base = maybe('data-baseline-summary') ? {sum: data('data-baseline-summary'), ser: data('data-baseline-series'),
    spec: data('data-baseline-spectrum'), set: data('data-baseline-settings')} : null;
  document.getElementById('title').textContent = 'folio-bench: ' + sum.mode + ', ' + sum.description;
  document.getElementById('when').textContent = set.started + ' - ' + set.command;
  var st = sum.status === 0 ? 'passed' : 'FAILED (exit ' + sum.status + ')';
  tile('requests', fmtNum(sum.requests));
  tile('requests/s', fmtNum(sum.rps));
  tile('p50', fmtUs(sum.p50_us));
  tile('p99', fmtUs(sum.p99_us));
  tile('p99.9', fmtUs(sum.p999_us));
  tile('errors', fmtNum(sum.errors) + (sum.expected_errors ? ' (' + fmtNum(sum.expected_errors) + ' expected)' : ''), sum.unexpected_errors > 0 ? 'bad' : '');
  var shares = (ser.server_cores || []).filter(function (v) { return v !== null; });
  if (shares.length > 0)
    tile('server CPU of ' + ser.cores + ' cores', fmtPct(100 * shares.reduce(function (a, b) { return a + b; }, 0) / shares.length / ser.cores));
  tile('run', st, sum.status === 0 ? 'good' : 'bad');
  if (sum.why) document.getElementById('why').textContent = sum.why;
  /* Closed loops wait for each answer before the next request. */
  if (sum.mode !== 'open') {
    var warn = document.getElementById('warn');
    warn.textContent = 'Coordinated omission: in the ' + sum.mode + ' mode each connection sends its next request only ' +
      'once the last is answered, so while the server stalls the requests that would have come meanwhile are never ' +
      'sent, and never measured: these latencies understate what clients see at this load. Measure latency in the ' +
      'open loop (folio-bench -R RATE), which times each request from when it was due.';
    warn.style.display = 'block';
  }
  var xs = ser.t;
  var fmtS = function (v) { return v.toFixed(v < 10 ? 1 : 0) + 's'; };
  /* The baseline's line of a column, dashed, in the colour of this run's. */
  var dashed = function (name, col, color, scale) {
    if (!base || !base.ser[col]) return [];
    return [{name: name + ' (baseline)', x: base.ser.t, dash: true, color: color,
      y: base.ser[col].map(function (v) { return v === null ? null : v * (scale || 1); })}];
  };
  chart('throughput', {xs: xs, x0: 0, fmtX: fmtS, series: [
    {name: 'answers/s', y: ser.rps, color: COLORS[0]},
    {name: 'errors/s', y: ser.errors_per_s, color: '#d62728'}].concat(dashed('answers/s', 'rps', COLORS[0]))});
  chart('latency', {xs: xs, x0: 0, fmtX: fmtS, logY: true, fmtY: fmtUs, series: [
    {name: 'p50', y: ser.p50_us, color: COLORS[0]}, {name: 'p90', y: ser.p90_us, color: COLORS[1]},
    {name: 'p99', y: ser.p99_us, color: COLORS[2]}, {name: 'p99.9', y: ser.p999_us, color: COLORS[3]},
    {name: 'max', y: ser.max_us, color: '#999'}].concat(dashed('p50', 'p50_us', COLORS[0]), dashed('p99', 'p99_us', COLORS[2]))});
  var mnames = Object.keys(ser.methods || {}), mseries = [];
  mnames.forEach(function (m, i) {
    mseries.push({name: m + ' p99', y: ser.methods[m].p99_us, color: COLORS[i % COLORS.length]});
    mseries.push({name: m + ' p50', y: ser.methods[m].p50_us, color: COLORS[i % COLORS.length], dash: true});
  });
  chart('method-latency', {xs: xs, x0: 0, fmtX: fmtS, logY: true, fmtY: fmtUs, series: mseries});
  chart('bytes', {xs: xs, x0: 0, fmtX: fmtS, fmtY: fmtBytes, series: [
    {name: 'sent/s', y: ser.bytes_out_per_s || [], color: COLORS[0]},
    {name: 'received/s', y: ser.bytes_in_per_s || [], color: COLORS[1]}].concat(
      dashed('sent/s', 'bytes_out_per_s', COLORS[0]), dashed('received/s', 'bytes_in_per_s', COLORS[1]))});
  /*
   * The percentile spectrum: x is -log10(1 - p), as HdrHistogram plots it,
   * each line only as far as its answers tell (1 - 1/n).
   */
  var methods = Object.keys(spec.methods);
  var pos = function (p) { return -Math.log10(Math.max(1 - p / 100, 1e-12)); };
  var lines = [{name: 'all', l: specLine(spec.all)}];
  if (methods.length > 1)
    methods.forEach(function (m) { lines.push({name: m, l: specLine(spec.methods[m])}); });
  if (base) lines.push({name: 'all (baseline)', l: specLine(base.spec.all), dash: true, color: COLORS[0]});
  var reach = 0;
  var spectrum = lines.map(function (l, i) {
    var cap = Math.min(6, l.l.n > 1 ? Math.log10(l.l.n) : spec.cap), x = [], y = [];
    l.l.pts.forEach(function (p) {
      var v = pos(p[0]);
      if (v <= cap) { x.push(v); y.push(p[1]); }
      else if (x.length === 0 || x[x.length - 1] < cap) { x.push(cap); y.push(p[1]); }
    });
    reach = Math.max(reach, x.length ? x[x.length - 1] : 0);
    return {name: l.name, x: x, y: y, dash: l.dash, color: l.color || COLORS[i % COLORS.length]};
  });
  var labels = [[0, '0%'], [1, '90%'], [2, '99%'], [3, '99.9%'], [4, '99.99%'], [5, '99.999%'], [6, '99.9999%']];
  chart('spectrum', {xs: [], x0: 0, logY: true, fmtY: fmtUs, xLabels: labels.filter(function (p) { return p[0] <= Math.ceil(reach - 1e-9); }), series: spectrum,
    fmtXTip: function (v) { return 'p' + (100 - 100 * Math.pow(10, -v)).toPrecision(6); }});
  var codeRows = Object.keys(sum.errors_by_code).map(function (k) {
    var exp = sum.expected_by_code[k] || 0, n = sum.errors_by_code[k];
    return [k + ' ' + (set.codes[k] || ''), n, exp === n ? 'expected' : exp > 0 ? exp + ' expected' : ''];
  });
  if (sum.lost > 0) codeRows.push(['lost (no answer)', sum.lost, '']);
  bars('codes', codeRows);
  var codeSeries = Object.keys(ser.codes).map(function (k) {
    return {name: k + ' ' + (set.codes[k] || ''), y: ser.codes[k].map(function (v, i) { return ser.interval[i] > 0 ? v / ser.interval[i] : null; })};
  });
  /* With no errors, the bars above say so once: no empty chart below. */
  if (codeRows.length > 0)
    chart('codes-time', {xs: xs, x0: 0, fmtX: fmtS, series: codeSeries, empty: 'no errors'});
  else
    document.getElementById('codes-time').style.display = 'none';
  table('methods', ['method', 'sent', 'answers', 'errors', 'p50', 'p90', 'p99', 'p99.9', 'max', 'mean'],
    Object.keys(sum.methods).map(function (m) {
      var r = sum.methods[m];
      return [m, fmtNum(r.sent), fmtNum(r.requests), fmtNum(r.errors), fmtUs(r.p50_us), fmtUs(r.p90_us),
        fmtUs(r.p99_us), fmtUs(r.p999_us), fmtUs(r.max_us), fmtUs(r.mean_us)];
    }));
  var srv = sum.server;
  var srvRows = [];
  if (srv) {
    srvRows.push(['source', srv.source + (srv.cpu_source !== srv.source ? ', CPU from ' + srv.cpu_source : '')]);
    srvRows.push(['requests counted by the server', fmtNum(srv.requests)]);
    if (srv.cpu_s !== undefined) {
      srvRows.push(['CPU', srv.cpu_s.toFixed(3) + ' s' + (sum.seconds > 0 ? ', ' + fmtPct(100 * srv.cpu_s / sum.seconds / ser.cores) + ' of ' + ser.cores + ' cores' : '')]);
      srvRows.push(['CPU per request', fmtUs(srv.cpu_us_per_req)]);
    }
    if (srv.allocs !== undefined) {
      srvRows.push(['heap allocations', fmtNum(srv.allocs)]);
      srvRows.push(['allocations per request', srv.allocs_per_req.toFixed(4)]);
    }
  } else {
    srvRows.push(['server', 'not read: give --admin SOCKET or --server-pid PID']);
  }
  table('server', ['', ''], srvRows);
  var notRead = srv ? 'the server\'s CPU time was not read each second' : 'the server was not read (--admin, --server-pid)';
  var share = function (v) { return v === null ? null : 100 * v / ser.cores; };
  chart('server-cores', {xs: xs, x0: 0, fmtX: fmtS, fmtY: fmtPct, empty: notRead, series: [
    {name: 'server CPU, % of ' + ser.cores + ' cores', y: (ser.server_cores || []).map(share), color: COLORS[4]}].concat(
      dashed('server CPU', 'server_cores', COLORS[4], 100 / ser.cores))});
  chart('server-cpu', {xs: xs, x0: 0, fmtX: fmtS, fmtY: fmtUs, empty: notRead, series: [
    {name: 'CPU per request', y: ser.cpu_us_per_req, color: COLORS[0]}].concat(dashed('CPU per request', 'cpu_us_per_req', COLORS[0]))});
  chart('server-allocs', {xs: xs, x0: 0, fmtX: fmtS, series: [{name: 'allocations per request', y: ser.allocs_per_req, color: '#e8743b'}],
    empty: srv ? 'the server\'s allocations were not read each second' : 'the server was not read (--admin)'});
  if (ser.users.some(function (v) { return v > 0; }))
    chart('users', {xs: xs, x0: 0, fmtX: fmtS, series: [{name: 'virtual users', y: ser.users}]});
  else
    document.getElementById('users-card').style.display = 'none';
  if (base) {
    var b = base.sum, bs = b.server || {}, s = sum.server || {};
    var change = function (now, then) {
      if (now === null || then === null || now === undefined || then === undefined || !(then > 0)) return '-';
      var r = now / then;
      return (r >= 1 ? '+' : '') + ((r - 1) * 100).toFixed(1) + '%';
    };
    var row = function (name, now, then, f) { return [name, f(now), f(then), change(now, then)]; };
    var perS = function (v, secs) { return v !== undefined && secs > 0 ? v / secs : undefined; };
    document.getElementById('compare-what').textContent = 'This run against ' + base.set.started + ' (' +
      base.set.command + '), drawn dashed in the charts.';
    table('compare', ['', 'this run', 'baseline', 'change'], [
      row('requests/s', sum.rps, b.rps, fmtNum),
      row('p50', sum.p50_us, b.p50_us, fmtUs), row('p90', sum.p90_us, b.p90_us, fmtUs),
      row('p99', sum.p99_us, b.p99_us, fmtUs), row('p99.9', sum.p999_us, b.p999_us, fmtUs),
      row('max', sum.max_us, b.max_us, fmtUs),
      row('errors', sum.errors, b.errors, fmtNum),
      row('server CPU per request', s.cpu_us_per_req, bs.cpu_us_per_req, fmtUs),
      row('allocations per request', s.allocs_per_req, bs.allocs_per_req, function (v) { return v === undefined ? '-' : v.toFixed(4); }),
      row('bytes sent/s', perS(sum.bytes_sent, sum.seconds), perS(b.bytes_sent, b.seconds), fmtBytes),
      row('bytes received/s', perS(sum.bytes_received, sum.seconds), perS(b.bytes_received, b.seconds), fmtBytes)]);
  } else {
    document.getElementById('compare-card').style.display = 'none';
  }
  if (prof) {
    var fv = prof.unit === 'nanoseconds' ? function (v) { return fmtUs(v / 1000); }
      : prof.unit === 'bytes' ? fmtBytes : fmtNum;
    var pc = function (v) { return prof.total > 0 ? fmtPct(100 * v / prof.total) : '-'; };
    document.getElementById('profile-what').textContent = 'The top functions of ' + prof.file + ' (' + prof.type +
      ', ' + fv(prof.total) + ' in all), as pprof -top prints them: flat in the function itself, cum with what it calls.';
    table('profile', ['function', 'flat', 'flat%', 'cum', 'cum%'], prof.rows.map(function (r) {
      return [r[0], fv(r[1]), pc(r[1]), fv(r[2]), pc(r[2])];
    }));
  } else {
    document.getElementById('profile-card').style.display = 'none';
  }
  var rows = [];
  Object.keys(set).forEach(function (k) {
    if (k === 'codes') return;
    var v = set[k];
    rows.push([k, Array.isArray(v) ? v.join(', ') : String(v)]);
  });
  (sum.thresholds || []).forEach(function (c) {
    rows.push(['--' + c.threshold, (c.passed ? 'passed' : 'FAILED') + ': ' + c.text + (c.detail ? ' (' + c.detail + ')' : '')]);
  });
  table('settings', ['setting', 'value'], rows);
  document.body.setAttribute('data-state', 'drawn');
  document.body.setAttribute('data-series', String(xs.length));
}
try {
  draw();
} catch (e) {
  failures.push(String(e && e.stack || e));
  document.body.setAttribute('data-errors', String(failures.length));
  document.getElementById('errors').textContent = failures.join('; ');
}
