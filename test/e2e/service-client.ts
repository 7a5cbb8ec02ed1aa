/** Calls to a `wrangler dev` service from end-to-end tests: the admin API with its admin token, and the public operations. */

export interface ServiceUnderTest {
	base: string;
	adminToken: string;
}

export interface Answer {
	status: number;
	body: Record<string, any>;
}

export function serviceClient(service: () => ServiceUnderTest) {
	return {
		async admin(method: string, path: string, body?: unknown): Promise<Answer> {
			const { base, adminToken } = service();
			const res = await fetch(`${base}/admin/v1${path}`, {
				method,
				headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
				...(body === undefined ? {} : { body: JSON.stringify(body) }),
			});
			return { status: res.status, body: (await res.json()) as Record<string, any> };
		},
		async api(operation: string, body: Record<string, unknown>): Promise<Answer> {
			const res = await fetch(`${service().base}/saas/v1_0/${operation}`, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify(body),
			});
			return { status: res.status, body: (await res.json()) as Record<string, any> };
		},
	};
}
