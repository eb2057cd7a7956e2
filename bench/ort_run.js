#!/usr/bin/env node
// Peer driver: run a model with onnxruntime-node (CPU) on ONNX test data.
//
//   ort_run.js MODEL.onnx|MODEL_DIR [--inputs DIR] [--threads T] [--runs N]
//              [--warmup W] [--check] [--profile PREFIX]
//
// MODEL_DIR is a folder holding model.onnx and test_data_set_0/ (the layout
// of tests/models/make_models.py). --inputs DIR holds input_N.pb
// (onnx.TensorProto) and, for --check, output_N.pb; it defaults to
// test_data_set_0 beside the model. Inputs are matched to the model's inputs
// by TensorProto name, else by position.
//
// After W warm-up runs (default 1), N timed runs (default 10) of the session
// with T intra-op threads (default 1; inter-op 1, sequential execution).
// Prints one JSON line:
//   {"model":..., "threads":T, "runs":N, "median_ms":..., "min_ms":...,
//    "max_ms":..., "check":"pass"|"fail"|null, "max_abs_err":..., "worst":...}
// --profile PREFIX writes onnxruntime's per-node profile of the warm-up and
// timed runs to PREFIX_<date>.json (Chrome trace format; the path goes to
// stderr): what `ipu-exec --profile` is compared with, node by node.
// --check compares the outputs with output_N.pb as numpy.allclose(rtol=1e-3,
// atol=1e-4) does and exits 1 on a mismatch. Bad usage or input: exit 2.
'use strict';
const fs = require('fs');
const path = require('path');

const RTOL = 1e-3, ATOL = 1e-4;
const USAGE = 'usage: ort_run.js MODEL.onnx|MODEL_DIR [--inputs DIR] [--threads T] ' +
              '[--runs N] [--warmup W] [--check] [--profile PREFIX]';

function die(msg, code = 2) {
  process.stderr.write(`ort_run.js: ${msg}\n`);
  process.exit(code);
}

let ort, onnx;
try {
  ort = require('onnxruntime-node');
  ({ onnx } = require('onnx-proto'));
} catch (e) {
  die(`onnxruntime-node not installed (run bench/setup.sh): ${e.message}`, 77);
}

// onnx.TensorProto.DataType -> [onnxruntime type name, typed array]
const DTYPES = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array],
  4: ['uint16', Uint16Array], 5: ['int16', Int16Array], 6: ['int32', Int32Array],
  7: ['int64', BigInt64Array], 9: ['bool', Uint8Array], 10: ['float16', Uint16Array],
  11: ['float64', Float64Array], 12: ['uint32', Uint32Array], 13: ['uint64', BigUint64Array],
  16: ['bfloat16', Uint16Array],
};

// Element i of a tensor as a JS number (float16/bfloat16 are stored as bits).
const F32 = new Float32Array(1), U32 = new Uint32Array(F32.buffer);
function halfToNumber(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
function element(t, i) {
  if (t.type === 'float16') return halfToNumber(t.data[i]);
  if (t.type === 'bfloat16') { U32[0] = t.data[i] << 16; return F32[0]; }
  return Number(t.data[i]);
}

function parseArgs(argv) {
  const o = { model: null, inputs: null, threads: 1, runs: 10, warmup: 1, check: false, profile: null };
  const num = (i, name, min) => {
    const v = Number(argv[i]);
    if (!Number.isInteger(v) || v < min) die(`${name} needs an integer >= ${min}, got '${argv[i]}'`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--inputs') o.inputs = argv[++i];
    else if (a === '--threads') o.threads = num(++i, a, 1);
    else if (a === '--runs') o.runs = num(++i, a, 1);
    else if (a === '--warmup') o.warmup = num(++i, a, 0);
    else if (a === '--check') o.check = true;
    else if (a === '--profile') {
      o.profile = argv[++i];
      if (!o.profile) die('--profile needs a file prefix');
    }
    else if (a === '-h' || a === '--help') { console.log(USAGE); process.exit(0); }
    else if (a.startsWith('-')) die(`unknown option ${a}\n${USAGE}`);
    else if (o.model === null) o.model = a;
    else die(`unexpected argument ${a}\n${USAGE}`);
  }
  if (o.model === null) die(USAGE);
  if (fs.existsSync(o.model) && fs.statSync(o.model).isDirectory()) {
    o.inputs = o.inputs || path.join(o.model, 'test_data_set_0');
    o.model = path.join(o.model, 'model.onnx');
  }
  if (!fs.existsSync(o.model)) die(`${o.model}: no such file`);
  o.inputs = o.inputs || path.join(path.dirname(o.model), 'test_data_set_0');
  if (!fs.existsSync(o.inputs)) die(`${o.inputs}: no such directory`);
  return o;
}

function readTensor(file) {
  let t;
  try {
    t = onnx.TensorProto.decode(fs.readFileSync(file));
  } catch (e) {
    die(`${file}: not a TensorProto: ${e.message}`);
  }
  const [type, Arr] = DTYPES[t.dataType] || [];
  if (!type) die(`${file}: unsupported TensorProto data_type ${t.dataType}`);
  const dims = t.dims.map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  let data;
  if (t.rawData && t.rawData.length) {
    if (t.rawData.length !== count * Arr.BYTES_PER_ELEMENT)
      die(`${file}: raw_data holds ${t.rawData.length} bytes, dims [${dims}] need ${count * Arr.BYTES_PER_ELEMENT}`);
    const copy = Uint8Array.from(t.rawData); // aligned copy
    data = new Arr(copy.buffer);
  } else if (Arr === BigInt64Array || Arr === BigUint64Array) {
    const src = t.dataType === 13 ? t.uint64Data : t.int64Data;
    data = Arr.from(src, (v) => BigInt(v.toString()));
  } else if (t.dataType === 1) data = Float32Array.from(t.floatData);
  else if (t.dataType === 11) data = Float64Array.from(t.doubleData);
  else data = Arr.from(t.int32Data);
  if (data.length !== count) die(`${file}: holds ${data.length} values, dims [${dims}] need ${count}`);
  return { name: t.name, tensor: new ort.Tensor(type, data, dims) };
}

function numbered(dir, prefix) {
  const re = new RegExp(`^${prefix}_(\\d+)\\.pb$`);
  return fs.readdirSync(dir).map((f) => [f, re.exec(f)]).filter(([, m]) => m)
    .sort((x, y) => Number(x[1][1]) - Number(y[1][1])).map(([f]) => path.join(dir, f));
}

// numpy.allclose(got, want, rtol, atol): |got - want| <= atol + rtol * |want|,
// NaN equal to nothing (numpy's default), infinities equal only to themselves.
function compare(name, got, want) {
  const r = { ok: true, maxAbs: 0, worst: null };
  if (got.dims.join(',') !== want.dims.join(',') || got.type !== want.type) {
    r.ok = false;
    r.worst = `${name}: ${got.type}[${got.dims}] differs from reference ${want.type}[${want.dims}]`;
    return r;
  }
  let worstExcess = -Infinity;
  for (let i = 0; i < want.data.length; i++) {
    const x = element(got, i), y = element(want, i);
    let excess;
    if (x === y) excess = -ATOL;
    else if (!Number.isFinite(x) || !Number.isFinite(y)) excess = Infinity;
    else {
      const d = Math.abs(x - y);
      r.maxAbs = Math.max(r.maxAbs, d);
      excess = d - (ATOL + RTOL * Math.abs(y));
    }
    if (excess > worstExcess) {
      worstExcess = excess;
      r.worst = `${name}[${i}]: got ${x}, expected ${y}`;
    }
  }
  r.ok = worstExcess <= 0;
  return r;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let sess;
  try {
    sess = await ort.InferenceSession.create(o.model, {
      intraOpNumThreads: o.threads, interOpNumThreads: 1, executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      ...(o.profile ? { enableProfiling: true, profileFilePrefix: o.profile } : {}),
    });
  } catch (e) {
    die(`${o.model}: onnxruntime cannot load it: ${e.message}`);
  }
  const files = numbered(o.inputs, 'input');
  if (files.length !== sess.inputNames.length)
    die(`${o.inputs}: ${files.length} input_N.pb files, the model has ${sess.inputNames.length} inputs`);
  const feeds = {};
  files.forEach((f, i) => {
    const { name, tensor } = readTensor(f);
    feeds[sess.inputNames.includes(name) ? name : sess.inputNames[i]] = tensor;
  });

  let outputs = null;
  for (let i = 0; i < Math.max(o.warmup, o.check ? 1 : 0); i++) outputs = await sess.run(feeds);
  const times = [];
  for (let i = 0; i < o.runs; i++) {
    const t0 = process.hrtime.bigint();
    await sess.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  if (o.profile) {
    sess.endProfiling();
    process.stderr.write(`ort_run.js: profile written to ${o.profile}_<date>.json\n`);
  }
  times.sort((a, b) => a - b);
  const ms = (v) => +v.toFixed(3);
  const res = {
    model: o.model, threads: o.threads, runs: o.runs,
    median_ms: ms(times.length % 2 ? times[times.length >> 1]
      : (times[times.length / 2 - 1] + times[times.length / 2]) / 2),
    min_ms: ms(times[0]), max_ms: ms(times[times.length - 1]),
    check: null, max_abs_err: null, worst: null,
  };
  if (o.check) {
    const refs = numbered(o.inputs, 'output');
    if (refs.length === 0) die(`${o.inputs}: no output_N.pb to check against`);
    res.check = 'pass';
    res.max_abs_err = 0;
    refs.forEach((f, i) => {
      const name = sess.outputNames[i];
      if (name === undefined) die(`${f}: the model has only ${sess.outputNames.length} outputs`);
      const c = compare(name, outputs[name], readTensor(f).tensor);
      res.max_abs_err = Math.max(res.max_abs_err, c.maxAbs);
      if (!c.ok && res.check === 'pass') { res.check = 'fail'; res.worst = c.worst; }
    });
  }
  console.log(JSON.stringify(res));
  if (res.check === 'fail') {
    process.stderr.write(`ort_run.js: mismatch: ${res.worst}\n`);
    process.exit(1);
  }
}

main().catch((e) => die(e.stack || String(e), 1));
