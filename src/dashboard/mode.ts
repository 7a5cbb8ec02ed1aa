import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { withTestMode } from "../admin/test-mode";

/**
 * Whether the dashboard's "Test data" switch is on for this request (a
 * cookie; the switch itself is test-mode.ts), and the admin API path the
 * dashboard calls accordingly. Apart from the switch so that the dashboard's
 * API client (api.ts) imports nothing that imports it back.
 */
export const MODE_COOKIE = "dashboard_mode";

export const isTestMode = (c: Context) => getCookie(c, MODE_COOKIE) === "test";

/** An admin API path as the dashboard calls it, with ?mode=test on a data route while the switch is on. */
export const dashboardApiPath = (c: Context, path: string) => (isTestMode(c) ? withTestMode(path) : path);
