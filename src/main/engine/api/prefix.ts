/** Where the API is served; URLs the API hands out (events, images, uploads) start with it. */
export const API_PREFIX = '/api/v1';
