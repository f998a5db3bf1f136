// One Actor call as Mastra's LongMemEval runner makes it (explorations/longmemeval run.ts: an Agent whose model is
// the router string `openai/<model>`, `agent.generate(question, {modelSettings: {temperature: 0}})`, no max tokens),
// sent to the conformance fake model so its request body can be read back (conformance/actor_params.py).
//
//   node actor_request.mjs <folder with node_modules/@mastra/core> <model, e.g. openai/gpt-5-mini> <system> <user>
//
// OPENAI_BASE_URL (the fake model) and OPENAI_API_KEY (any value) come from the environment. Prints one JSON line:
// {"text": the reply, "warnings": the call's warnings}.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const [dir, model, system, user] = process.argv.slice(2);
const req = createRequire(join(dir, 'package.json'));
const { Agent } = await import(pathToFileURL(req.resolve('@mastra/core/agent')).href);
const agent = new Agent({ id: 'actor-request', name: 'actor-request', model, instructions: system });
const r = await agent.generate(user, { modelSettings: { temperature: 0 } });
console.log(JSON.stringify({ text: r.text, warnings: r.warnings ?? [] }));
