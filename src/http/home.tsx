/** @jsxImportSource hono/jsx */
import { Hono } from "hono";

/**
 * `/`: a small page that says what this is and links to what a person
 * opening the service's address wants (the dashboard, the API reference, the
 * health check), instead of the API's JSON 404.
 */
export const homeRoutes = new Hono<{ Bindings: Env }>();

homeRoutes.get("/", (c) =>
	c.html(
		<html lang="en">
			<head>
				<meta charset="utf-8" />
				<meta name="viewport" content="width=device-width, initial-scale=1" />
				<title>Referral and rewards service</title>
			</head>
			<body>
				<main>
					<h1>Referral and rewards service</h1>
					<p>This service's API is called by your product's back end (POST /saas/v1_0/&lt;operation&gt;).</p>
					<ul>
						<li>
							<a href="/dashboard">Dashboard</a>: campaigns, users, the review queue and analytics (admin sign-in).
						</li>
						<li>
							<a href="/docs">API reference</a> (the OpenAPI document is at <a href="/openapi.json">/openapi.json</a>).
						</li>
						<li>
							<a href="/health">Health check</a>.
						</li>
					</ul>
				</main>
			</body>
		</html>,
	),
);
