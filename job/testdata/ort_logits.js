// Runs an ONNX model in ONNX Runtime (onnxruntime-node) on raw float32
// pixels and prints its logits as one JSON array: the independent client
// job's export test compares with dptune's own forward pass.
// Usage: node ort_logits.js ORT_MODULE_DIR MODEL.onnx PIXELS.f32 N C H W
const [ortDir, model, pixels, ...dims] = process.argv.slice(2);
const ort = require(ortDir);
const fs = require("fs");
(async () => {
  const buf = fs.readFileSync(pixels);
  const data = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
  const session = await ort.InferenceSession.create(model);
  const out = await session.run({ pixels: new ort.Tensor("float32", data, dims.map(Number)) });
  process.stdout.write(JSON.stringify(Array.from(out.logits.data)));
})().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
