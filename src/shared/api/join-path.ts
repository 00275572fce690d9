/** The GUI's page for an invitation's link: JOIN_PATH/<secret>. Apart from the schemas, so the first screen loads no TypeBox. */
export const JOIN_PATH = '/join';
