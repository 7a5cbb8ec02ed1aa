import { describe, expect, it } from "vitest";
import { ipHash, ipNetwork } from "../../src/domain/ip";

describe("ipNetwork", () => {
	it("keeps an IPv4 address whole", () => {
		expect(ipNetwork("203.0.113.7")).toBe("203.0.113.7");
		expect(ipNetwork(" 10.0.0.1 ")).toBe("10.0.0.1");
	});

	it("reduces IPv6 to its /64, whatever the spelling", () => {
		expect(ipNetwork("2001:db8:0:1::5")).toBe("2001:db8:0:1::/64");
		expect(ipNetwork("2001:0DB8:0000:0001:ffff:0:0:9")).toBe("2001:db8:0:1::/64");
		expect(ipNetwork("::1")).toBe("0:0:0:0::/64");
		expect(ipNetwork("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
	});

	it("maps IPv4-mapped IPv6 to the IPv4 address", () => {
		expect(ipNetwork("::ffff:203.0.113.7")).toBe("203.0.113.7");
		expect(ipNetwork("::ffff:cb00:7107")).toBe("203.0.113.7");
	});

	it("refuses what is not an address", () => {
		for (const bad of [
			"",
			"256.1.1.1",
			"1.2.3",
			"01.2.3.4",
			"1.2.3.4.5",
			"abc",
			"2001:db8::1::2",
			"1:2:3:4:5:6:7:8:9",
			"12345::",
			"::ffff:1.2.3.999",
		]) {
			expect(ipNetwork(bad), bad).toBeNull();
		}
	});
});

describe("ipHash", () => {
	it("is keyed: equal for equal networks under one key, different under another, never the address", async () => {
		const a = await ipHash("key-1", "203.0.113.7");
		expect(a).toMatch(/^[0-9a-f]{64}$/);
		expect(await ipHash("key-1", "203.0.113.7")).toBe(a);
		expect(await ipHash("key-2", "203.0.113.7")).not.toBe(a);
		expect(await ipHash("key-1", "203.0.113.8")).not.toBe(a);
		await expect(ipHash("", "203.0.113.7")).rejects.toThrow(/IP_HASH_KEY/);
	});
});
