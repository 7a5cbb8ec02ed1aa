import { type App, findLiveApp } from "../db/apps";
import { ApiError } from "../http/errors";

/** 404 app_not_found unless the app exists. */
export async function requireAppId(db: D1Database, appid: string): Promise<void> {
	if (!(await findLiveApp(db, appid))) throw new ApiError(404, "app_not_found", "No app with that appid.");
}

/** The app, or 404 app_not_found. */
export async function requireApp(db: D1Database, appid: string): Promise<App> {
	const app = await findLiveApp(db, appid);
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	return app;
}
