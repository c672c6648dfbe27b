// Loaded with --import into a pingroll process a test means to kill: PINGROLL_TEST_KILL_AT names the
// point where the process SIGKILLs itself, so that a kill lands where the test says, not where a
// timer happens to fall on a busy machine. The points (`#N`: the Nth time; the first when left out):
// - `event:NAME[#N]`: right after the run logs the event NAME (its JSON line written);
// - `store:OP:PREFIX:before|after[#N]`: before or after a call of the directory store's OP (put,
//   putUnsynced, putIfAbsent, putMarker, move, delete) on a key that starts with PREFIX (move: its
//   destination);
// - `fs:rename:PART:before|after[#N]`: before or after a rename of a path that holds PART (the
//   embedded warehouse's new file renamed over the old one).
import { createRequire } from 'node:module';
import fsp from 'node:fs/promises';

const spec = process.env.PINGROLL_TEST_KILL_AT;
const die = () => process.kill(process.pid, 'SIGKILL');

/** Whether this is the Nth matching call: `tail` is `when#N`. */
function counter(tail) {
  const [when, nth = '1'] = tail.split('#');
  let n = 0;
  return { when, hit: () => ++n === Number(nth) };
}

if (spec?.startsWith('event:')) {
  const [name, nth = '1'] = spec.slice('event:'.length).split('#');
  let n = 0;
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk, ...rest) => {
    const written = write(chunk, ...rest);
    if (String(chunk).includes(`"event":"${name}"`) && ++n === Number(nth)) die();
    return written;
  };
} else if (spec?.startsWith('store:')) {
  const [, op, prefix, tail] = spec.split(':');
  const { when, hit } = counter(tail);
  // The program's own class: the linked program exposes it (cli/program.ts), and bin/load-program.js
  // takes the program already in require's cache, so both see one class.
  const { DirectoryObjectStore } = createRequire(import.meta.url)('../../dist/bundle/program.cjs');
  const original = DirectoryObjectStore.prototype[op];
  DirectoryObjectStore.prototype[op] = async function (...args) {
    const key = op === 'move' ? args[1] : args[0];
    const at = key.startsWith(prefix) && hit();
    if (at && when === 'before') die();
    const result = await original.apply(this, args);
    if (at) die();
    return result;
  };
} else if (spec?.startsWith('fs:rename:')) {
  const [part, tail] = spec.slice('fs:rename:'.length).split(':');
  const { when, hit } = counter(tail);
  const original = fsp.rename;
  // The program (one CommonJS file) calls `rename` through the module's object: it sees the change.
  fsp.rename = async (from, to) => {
    const at = String(to).includes(part) && hit();
    if (at && when === 'before') die();
    await original(from, to);
    if (at) die();
  };
}
