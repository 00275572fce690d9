import { AssistantConfig, AssistantConfigBody, AssistantConfigPatch } from '../../../../shared/api/chats.js';
import type { AssistantSettings } from '../../services/assistant-settings.js';
import type { LabOwner } from '../../services/lab-owner.js';
import { BEARER, callerOf, responses, type App } from '../http.js';

/** The assistant's model provider (lab owner): the API key goes to the secret store and is never returned. */
export function labAssistantRoutes(app: App, assistant: AssistantSettings, labOwner: LabOwner): void {
  const tags = ['Extensions'];

  app.get('/lab/assistant', {
    schema: { tags, operationId: 'getAssistantConfig', summary: 'The assistant\'s provider, endpoint and model (lab owner)', security: BEARER, response: responses({ 200: AssistantConfig }, [401, 403]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    return assistant.config();
  });

  app.put('/lab/assistant', {
    schema: { tags, operationId: 'setAssistantConfig', summary: 'Set the assistant\'s provider (lab owner)', security: BEARER, body: AssistantConfigBody, response: responses({ 200: AssistantConfig }, [400, 401, 403]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    return assistant.update(req.body, true);
  });

  app.patch('/lab/assistant', {
    schema: { tags, operationId: 'updateAssistantConfig', summary: 'Change some of the assistant\'s settings (lab owner)', security: BEARER, body: AssistantConfigPatch, response: responses({ 200: AssistantConfig }, [400, 401, 403]) },
  }, (req) => {
    labOwner.require(callerOf(req));
    return assistant.update(req.body, false);
  });
}
