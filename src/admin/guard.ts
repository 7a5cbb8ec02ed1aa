import { findApp } from "../db/apps";
import { ApiError } from "../http/errors";

/** 404 app_not_found unless the app exists. */
export async function requireAppId(db: D1Database, appid: string): Promise<void> {
	if (!(await findApp(db, appid))) throw new ApiError(404, "app_not_found", "No app with that appid.");
}
