// Runs an ONNX model in ONNX Runtime (onnxruntime-node) on raw float32
// pixels and prints its logits as one JSON array: the independent client
// job's export test compares with dptune's own forward pass. The images
// go through the model BATCH at a time (default 50), which bounds the
// runtime's memory for large models (a ScatterNet front end's second
// order holds 64 complex maps per image channel).
// Usage: node ort_logits.js ORT_MODULE_DIR MODEL.onnx PIXELS.f32 N C H W [BATCH]
const [ortDir, model, pixels, ...rest] = process.argv.slice(2);
const [n, c, h, w] = rest.slice(0, 4).map(Number);
const batch = Number(rest[4] || 50);
const ort = require(ortDir);
const fs = require("fs");
(async () => {
  const buf = fs.readFileSync(pixels);
  const data = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
  const session = await ort.InferenceSession.create(model);
  const size = c * h * w;
  const logits = [];
  for (let lo = 0; lo < n; lo += batch) {
    const hi = Math.min(n, lo + batch);
    const x = new ort.Tensor("float32", data.subarray(lo * size, hi * size), [hi - lo, c, h, w]);
    const out = await session.run({ pixels: x });
    logits.push(...out.logits.data);
  }
  process.stdout.write(JSON.stringify(logits));
})().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
