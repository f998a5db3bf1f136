// Reads the Observer and Reflector texts of an unpacked @mastra/memory package (om_core/mastra_texts.py runs it).
//   node mastra_texts.mjs <unpacked package dir> <out.json>
// The package's dist/*.js.map files carry its TypeScript sources; the observational-memory sources are bundled
// with esbuild (types erased, every package import replaced by an inert stub: the texts are string constants and
// template functions that call into no package when built) and the builders are called with marker arguments, so
// om_core can cut the texts it needs out of what Mastra itself builds.
import { readFileSync, readdirSync, mkdirSync, writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const [pkgDir, outPath] = process.argv.slice(2);
const dist = join(pkgDir, 'dist');
const work = mkdtempSync(join(tmpdir(), 'om-mastra-texts-'));
for (const f of readdirSync(dist).filter(f => f.endsWith('.js.map'))) {
  const map = JSON.parse(readFileSync(join(dist, f), 'utf8'));
  (map.sources || []).forEach((source, i) => {
    const content = (map.sourcesContent || [])[i];
    if (!content || !source.includes('observational-memory/')) return;
    const path = join(work, source.replace(/^(\.\.\/)+/, ''));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  });
}
const om = join(work, 'src/processors/observational-memory');
for (const f of ['observer-agent.ts', 'reflector-agent.ts']) {
  if (!existsSync(join(om, f))) throw new Error(`${f} is not among the package's sources`);
}
const entry = join(work, 'entry.ts');
writeFileSync(entry, `export * as observer from '${om}/observer-agent';\nexport * as reflector from '${om}/reflector-agent';\n`);
const stub = {
  name: 'stub-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, a => ({ path: a.path, namespace: 'stub' }));
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
      contents: 'const h={get:(t,k)=>k==="__esModule"?false:(k===Symbol.toPrimitive?()=>"":new Proxy(function(){},h)),' +
        'apply:()=>new Proxy(function(){},h),construct:()=>new Proxy(function(){},h)};const P=new Proxy(function(){},h);' +
        'module.exports=new Proxy({},{get:(t,k)=>k==="__esModule"?false:P,ownKeys:()=>["z"],' +
        'getOwnPropertyDescriptor:()=>({value:P,enumerable:true,configurable:true,writable:true})});',
      loader: 'js',
    }));
  },
};
const bundle = join(work, 'bundle.mjs');
await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', outfile: bundle, plugins: [stub],
              logLevel: 'error' });
const { observer, reflector } = await import(pathToFileURL(bundle).href);
const OBS = '\u0001OBSERVATIONS\u0001';
const GUIDE = '\u0002GUIDANCE\u0002';
const THREADS = ['t1', 't2', 't3', 't4', 't5', 't6', 't7'];  // no messages: only the count shows
const out = {
  observer_system_single: observer.buildObserverSystemPrompt(false),
  observer_system_multi: observer.buildObserverSystemPrompt(true),
  observer_user_single: observer.buildObserverPrompt(OBS, []),
  observer_user_multi: observer.buildMultiThreadObserverPrompt(OBS, new Map(), THREADS),
  reflector_system: reflector.buildReflectorSystemPrompt(),
  reflector_user: reflector.buildReflectorPrompt(OBS, GUIDE, true),
  reflector_retry: reflector.COMPRESSION_RETRY_PROMPT,
};
for (const [k, v] of Object.entries(out)) {
  if (typeof v !== 'string' || !v) throw new Error(`${k}: the package built no text`);
}
writeFileSync(outPath, JSON.stringify(out));
