/** Seconds granted per billing period, per metered resource, and what overage may cost. */
export interface PlanAllowance {
  devices: number;
  instances: number;
  overageCapUsd: number;
}

/** The plans a lab offers; shared so that the GUI can show seconds used next to seconds remaining. */
export const DEFAULT_PLANS: Record<string, PlanAllowance> = {
  hobby: { devices: 10 * 3600, instances: 5 * 3600, overageCapUsd: 0 },
  pro: { devices: 200 * 3600, instances: 100 * 3600, overageCapUsd: 100 },
  team: { devices: 1000 * 3600, instances: 500 * 3600, overageCapUsd: 1000 },
};
