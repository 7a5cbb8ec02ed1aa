import { type App, findApp } from "../db/apps";
import { ApiError } from "../http/errors";

/** 404 app_not_found unless the app exists. */
export async function requireAppId(db: D1Database, appid: string): Promise<void> {
	if (!(await findApp(db, appid))) throw new ApiError(404, "app_not_found", "No app with that appid.");
}

/** The app, or 404 app_not_found (a test twin only through ?mode=test: test-mode.ts refuses its appid otherwise). */
export async function requireApp(db: D1Database, appid: string): Promise<App> {
	const app = await findApp(db, appid);
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	return app;
}
