import type { AssistantConfig, AssistantConfigPatch } from '../../../shared/api/chats.js';
import { anthropicProvider, ANTHROPIC_DEFAULT_ENDPOINT } from '../assistant/providers/anthropic.js';
import { offlineProvider } from '../assistant/providers/offline.js';
import { openAiProvider, OPENAI_DEFAULT_ENDPOINT } from '../assistant/providers/openai.js';
import type { Provider } from '../assistant/providers/types.js';
import { invalid } from '../domain/errors.js';
import type { EngineContext } from './context.js';

type ProviderName = AssistantConfig['provider'];

const PROVIDER = 'assistant_provider';
const ENDPOINT = 'assistant_endpoint';
const MODEL = 'assistant_model';
/** In the secret store (the OS keychain, or a 0600 file headless), never in SQLite. */
const API_KEY_SECRET = 'assistant:api-key';

const DEFAULT_ENDPOINTS: Record<ProviderName, string | null> = {
  offline: null,
  openai: OPENAI_DEFAULT_ENDPOINT,
  anthropic: ANTHROPIC_DEFAULT_ENDPOINT,
};

function stored(ctx: EngineContext) {
  const provider = (ctx.stores.settings.get(PROVIDER) ?? 'offline') as ProviderName;
  return { provider, endpoint: ctx.stores.settings.get(ENDPOINT) || null, model: ctx.stores.settings.get(MODEL) || null };
}

export async function assistantConfig(ctx: EngineContext): Promise<AssistantConfig> {
  return { ...stored(ctx), hasApiKey: (await ctx.secrets.get(API_KEY_SECRET)) !== undefined };
}

/** PUT replaces (fields left out go back to their defaults, except the key); PATCH changes only the fields sent. */
export async function updateAssistantConfig(ctx: EngineContext, change: AssistantConfigPatch, replace: boolean): Promise<AssistantConfig> {
  const current = stored(ctx);
  const provider = change.provider ?? current.provider;
  const providerChanged = provider !== current.provider;
  const endpoint = change.endpoint !== undefined ? change.endpoint : replace || providerChanged ? null : current.endpoint;
  const model = change.model !== undefined ? change.model : replace || providerChanged ? null : current.model;
  if (provider !== 'offline' && !model) {
    throw invalid('model_required', `The ${provider} provider needs a model, e.g. "llama3.1" for Ollama or the model id of your endpoint.`);
  }
  ctx.stores.settings.set(PROVIDER, provider);
  ctx.stores.settings.set(ENDPOINT, endpoint ?? '');
  ctx.stores.settings.set(MODEL, model ?? '');
  if (change.apiKey === null) await ctx.secrets.delete(API_KEY_SECRET);
  else if (change.apiKey !== undefined) await ctx.secrets.set(API_KEY_SECRET, change.apiKey);
  return assistantConfig(ctx);
}

/** The configured provider, read afresh for each message so that a change applies to the next one. */
export async function providerFor(ctx: EngineContext): Promise<Provider> {
  const { provider, endpoint, model } = stored(ctx);
  if (provider === 'offline' || !model) return offlineProvider();
  const apiKey = await ctx.secrets.get(API_KEY_SECRET);
  const url = endpoint ?? DEFAULT_ENDPOINTS[provider]!;
  return provider === 'openai' ? openAiProvider(url, model, apiKey) : anthropicProvider(url, model, apiKey);
}
