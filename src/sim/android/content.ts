import type { Device } from './device.js';
import type { CommandContext, CommandFn } from './shell.js';

/**
 * Android's `content` tool for the one provider clients drive through it: settings (content://settings/system,
 * secure, global). mobilecli sets the rotation with `content insert --uri content://settings/system --bind
 * name:s:user_rotation --bind value:i:1`. Output and exit statuses are those of Android 13's tool.
 */

const USAGE = 'usage: adb shell content [subcommand] [options]\n\nusage: adb shell content insert --uri <URI> [--user <USER_ID>] --bind <BINDING> [--bind <BINDING>...]\n';
const SETTINGS_URI = /^content:\/\/settings\/(system|secure|global)\/?$/;

interface Parsed {
  uri?: string;
  binds: Map<string, string>;
  where?: string;
  projection?: string[];
}

function parse(args: string[]): Parsed | string {
  const out: Parsed = { binds: new Map() };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i]!;
    const value = args[++i];
    if (value === undefined) return `Error: Argument expected after "${flag}"`;
    switch (flag) {
      case '--uri':
        out.uri = value;
        break;
      case '--user':
        break;
      case '--bind': {
        // name:type:value, where type is s, i, l, f, d, b or n (null).
        const m = /^([^:]+):([silfdbn]):(.*)$/s.exec(value);
        if (!m) return `Error: Invalid binding "${value}"`;
        out.binds.set(m[1]!, m[2] === 'n' ? 'null' : m[3]!);
        break;
      }
      case '--where':
        out.where = value;
        break;
      case '--projection':
        out.projection = value.split(':');
        break;
      case '--sort':
        break;
      default:
        return `Error: Unknown argument: ${flag}`;
    }
  }
  return out;
}

/** The rows a `--where` selects; the settings provider accepts name='x' (or "x", or bare). */
function selected(table: Map<string, string>, where: string | undefined): string[] {
  const names = [...table.keys()].sort();
  if (!where) return names;
  const m = /^\s*name\s*=\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s*$/.exec(where);
  if (!m) return [];
  const name = m[1] ?? m[2] ?? m[3]!;
  return table.has(name) ? [name] : [];
}

export function contentCommand(device: Device): CommandFn {
  const fail = async (ctx: CommandContext, message: string) => {
    await ctx.stderr.write(`${message}\n`);
    return 1;
  };
  return async (ctx) => {
    const [verb, ...rest] = ctx.args;
    if (!verb || !['insert', 'query', 'update', 'delete'].includes(verb)) {
      await ctx.stderr.write(USAGE);
      return 1;
    }
    const parsed = parse(rest);
    if (typeof parsed === 'string') return fail(ctx, parsed);
    if (!parsed.uri) return fail(ctx, 'Error: Content provider URI not specified. Did you specify --uri argument?');
    const ns = SETTINGS_URI.exec(parsed.uri)?.[1] as 'system' | 'secure' | 'global' | undefined;
    if (!ns) return fail(ctx, `Error while accessing provider:${parsed.uri.replace(/^content:\/\//, '').split('/')[0]}\njava.lang.IllegalArgumentException: Unknown URI ${parsed.uri}`);
    const table = device.settings[ns];
    switch (verb) {
      case 'insert': {
        const name = parsed.binds.get('name');
        const value = parsed.binds.get('value');
        if (name === undefined || value === undefined) return fail(ctx, 'Error: Bindings not specified. Did you specify --bind argument(s)?');
        table.set(name, value);
        device.changed();
        return 0;
      }
      case 'update': {
        const value = parsed.binds.get('value');
        if (value === undefined) return fail(ctx, 'Error: Bindings not specified. Did you specify --bind argument(s)?');
        for (const name of selected(table, parsed.where)) table.set(name, value);
        device.changed();
        return 0;
      }
      case 'delete':
        for (const name of selected(table, parsed.where)) table.delete(name);
        device.changed();
        return 0;
      default: {
        const rows = selected(table, parsed.where);
        if (rows.length === 0) {
          await ctx.stdout.write('No result found.\n');
          return 0;
        }
        const columns = parsed.projection ?? ['_id', 'name', 'value'];
        const ids = [...table.keys()].sort();
        const lines = rows.map((name, i) => {
          const cell = (c: string) => `${c}=${c === '_id' ? ids.indexOf(name) + 1 : c === 'name' ? name : c === 'value' ? table.get(name) : 'NULL'}`;
          return `Row: ${i} ${columns.map(cell).join(', ')}\n`;
        });
        await ctx.stdout.write(lines.join(''));
        return 0;
      }
    }
  };
}
