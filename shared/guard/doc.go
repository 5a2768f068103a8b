// Package guard decides, on the resolved IP of every dial, whether an
// outbound connection to a customer-supplied MCP server may be made, and
// builds the guarded HTTP clients.
//
// Default deny set (everything not public unicast), with the word each
// refusal carries:
//
//	IPv4: 0.0.0.0/8 unspecified, 127/8 loopback, 169.254/16 link-local,
//	      10/8 172.16/12 192.168/16 private, 100.64/10 cgnat,
//	      192.0.0/24 ietf-protocol, 192.0.2/24 198.51.100/24 203.0.113/24
//	      documentation, 192.88.99/24 6to4, 198.18/15 benchmarking,
//	      224/4 multicast, 255.255.255.255 broadcast, 240/4 reserved;
//	      169.254.169.254 169.254.170.2 169.254.170.23 100.100.100.200 metadata
//	IPv6: :: unspecified, ::1 loopback, ::/96 ipv4-compatible,
//	      64:ff9b:1::/48 nat64-local, fe80::/10 link-local, fec0::/10
//	      site-local, fc00::/7 unique-local, ff00::/8 multicast,
//	      2001:db8::/32 3fff::/20 documentation, 2001::/32 teredo,
//	      2001::/23 ietf-protocol, 2002::/16 6to4, fd00:ec2::254 fd00:ec2::23
//	      metadata, anything outside 2000::/3 not-global-unicast
//	Other: zoned addresses, unparsable addresses, networks but tcp4/tcp6.
//
// IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) addresses are
// judged by their embedded IPv4.
//
// Allow list, checked before the deny set: comma- or space-separated entries
// PREFIX or PREFIX:PORT, IPv6 with a port in brackets:
//
//	MCPFN_EGRESS_ALLOW="10.20.0.0/16, 127.0.0.1/32:8080 [::1/128]:8080 fd00::/8"
//
// Prefixes inside ::ffff:0:0/96 or 64:ff9b::/96 are rewritten as IPv4; the
// whole /96 is refused. No entry opens an unspecified address (0.0.0.0,
// ::), the Lambda Runtime API (AWS_LAMBDA_RUNTIME_API, default
// 127.0.0.1:9001), or any loopback address on the Runtime API's port.
package guard
