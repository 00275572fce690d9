import type { AssistantConfig, AssistantConfigPatch } from '../../../shared/api/chats.js';
import { anthropicProvider, ANTHROPIC_DEFAULT_ENDPOINT } from '../assistant/providers/anthropic.js';
import { offlineProvider } from '../assistant/providers/offline.js';
import { openAiProvider, OPENAI_DEFAULT_ENDPOINT } from '../assistant/providers/openai.js';
import type { Provider } from '../assistant/providers/types.js';
import { invalid } from '../domain/errors.js';
import type { SecretStore } from '../secrets.js';
import type { Stores } from '../store/index.js';

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

/** Which model the assistant uses: the lab owner's choice, its API key in the secret store, never in SQLite. */
export class AssistantSettings {
  constructor(
    private readonly stores: Pick<Stores, 'settings'>,
    private readonly secrets: SecretStore,
  ) {}

  private stored() {
    const provider = (this.stores.settings.get(PROVIDER) ?? 'offline') as ProviderName;
    return { provider, endpoint: this.stores.settings.get(ENDPOINT) || null, model: this.stores.settings.get(MODEL) || null };
  }

  async config(): Promise<AssistantConfig> {
    return { ...this.stored(), hasApiKey: (await this.secrets.get(API_KEY_SECRET)) !== undefined };
  }

  /** PUT replaces (fields left out go back to their defaults, except the key); PATCH changes only the fields sent. */
  async update(change: AssistantConfigPatch, replace: boolean): Promise<AssistantConfig> {
    const current = this.stored();
    const provider = change.provider ?? current.provider;
    const providerChanged = provider !== current.provider;
    const endpoint = change.endpoint !== undefined ? change.endpoint : replace || providerChanged ? null : current.endpoint;
    const model = change.model !== undefined ? change.model : replace || providerChanged ? null : current.model;
    if (provider !== 'offline' && !model) {
      throw invalid('model_required', `The ${provider} provider needs a model, e.g. "llama3.1" for Ollama or the model id of your endpoint.`);
    }
    this.stores.settings.set(PROVIDER, provider);
    this.stores.settings.set(ENDPOINT, endpoint ?? '');
    this.stores.settings.set(MODEL, model ?? '');
    if (change.apiKey === null) await this.secrets.delete(API_KEY_SECRET);
    else if (change.apiKey !== undefined) await this.secrets.set(API_KEY_SECRET, change.apiKey);
    return this.config();
  }

  /** The configured provider, read afresh for each message so that a change applies to the next one. */
  async provider(): Promise<Provider> {
    const { provider, endpoint, model } = this.stored();
    if (provider === 'offline' || !model) return offlineProvider();
    const apiKey = await this.secrets.get(API_KEY_SECRET);
    const url = endpoint ?? DEFAULT_ENDPOINTS[provider]!;
    return provider === 'openai' ? openAiProvider(url, model, apiKey) : anthropicProvider(url, model, apiKey);
  }
}
