package guard

import "net/netip"

type denyEntry struct {
	prefix netip.Prefix
	reason Reason
}

func deny(prefix string, r Reason) denyEntry {
	return denyEntry{netip.MustParsePrefix(prefix), r}
}

// denyV4 and denyV6 are matched in order; the first containing prefix wins,
// so specific entries (metadata) precede the ranges holding them.
var denyV4 = []denyEntry{
	deny("169.254.169.254/32", ReasonMetadata), // EC2 IMDS
	deny("169.254.170.2/32", ReasonMetadata),   // ECS task metadata and credentials
	deny("169.254.170.23/32", ReasonMetadata),  // EKS Pod Identity agent
	deny("100.100.100.200/32", ReasonMetadata), // Alibaba Cloud metadata
	deny("0.0.0.0/8", ReasonUnspecified),
	deny("127.0.0.0/8", ReasonLoopback),
	deny("169.254.0.0/16", ReasonLinkLocal),
	deny("10.0.0.0/8", ReasonPrivate),
	deny("172.16.0.0/12", ReasonPrivate),
	deny("192.168.0.0/16", ReasonPrivate),
	deny("100.64.0.0/10", ReasonCGNAT),
	deny("192.0.0.0/24", ReasonIETFProtocol),
	deny("192.0.2.0/24", ReasonDocumentation),
	deny("198.51.100.0/24", ReasonDocumentation),
	deny("203.0.113.0/24", ReasonDocumentation),
	deny("192.88.99.0/24", Reason6to4), // deprecated 6to4 relay anycast
	deny("198.18.0.0/15", ReasonBenchmarking),
	deny("224.0.0.0/4", ReasonMulticast),
	deny("255.255.255.255/32", ReasonBroadcast),
	deny("240.0.0.0/4", ReasonReserved),
}

var denyV6 = []denyEntry{
	deny("fd00:ec2::254/128", ReasonMetadata), // EC2 IMDS over IPv6
	deny("fd00:ec2::23/128", ReasonMetadata),  // EKS Pod Identity agent over IPv6
	deny("::/128", ReasonUnspecified),
	deny("::1/128", ReasonLoopback),
	deny("::/96", ReasonIPv4Compatible),
	deny("64:ff9b:1::/48", ReasonNAT64Local),
	deny("fe80::/10", ReasonLinkLocal),
	deny("fec0::/10", ReasonSiteLocal),
	deny("fc00::/7", ReasonUniqueLocal),
	deny("ff00::/8", ReasonMulticast),
	deny("2001:db8::/32", ReasonDocumentation),
	deny("3fff::/20", ReasonDocumentation),
	deny("2001::/32", ReasonTeredo),
	deny("2001::/23", ReasonIETFProtocol),
	deny("2002::/16", Reason6to4),
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// denyReason returns why the effective address a is refused by the default
// deny set, or ReasonUnknown if a is public unicast.
func denyReason(a netip.Addr) Reason {
	table := denyV6
	if a.Is4() {
		table = denyV4
	}
	for _, d := range table {
		if d.prefix.Contains(a) {
			return d.reason
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return ReasonNotGlobalUnicast
	}
	return ReasonUnknown
}
