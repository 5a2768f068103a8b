package guard

import "strconv"

// Reason names why an address is refused. It prints as a lowercase word
// suitable for logs and metric labels; the zero value prints "unknown".
type Reason uint8

// Reasons, one per refused address class or check.
const (
	ReasonUnknown          Reason = iota
	ReasonLoopback                // 127.0.0.0/8, ::1
	ReasonPrivate                 // 10/8, 172.16/12, 192.168/16
	ReasonCGNAT                   // 100.64.0.0/10
	ReasonMetadata                // cloud instance metadata endpoints
	ReasonLinkLocal               // 169.254.0.0/16, fe80::/10
	ReasonMulticast               // 224.0.0.0/4, ff00::/8
	ReasonUnspecified             // 0.0.0.0/8, ::
	ReasonBroadcast               // 255.255.255.255
	ReasonDocumentation           // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
	ReasonBenchmarking            // 198.18.0.0/15
	ReasonReserved                // 240.0.0.0/4
	ReasonIETFProtocol            // 192.0.0.0/24, 2001::/23 outside Teredo
	Reason6to4                    // 2002::/16, 192.88.99.0/24
	ReasonTeredo                  // 2001::/32
	ReasonNAT64Local              // 64:ff9b:1::/48
	ReasonIPv4Compatible          // ::a.b.c.d (deprecated IPv4-compatible IPv6)
	ReasonUniqueLocal             // fc00::/7
	ReasonSiteLocal               // fec0::/10
	ReasonNotGlobalUnicast        // IPv6 outside 2000::/3
	ReasonZoned                   // an address carrying a zone (fe80::1%eth0)
	ReasonUnparsable              // an address that does not parse
	ReasonNetwork                 // a network other than tcp, tcp4, tcp6
	ReasonRuntimeAPI              // the Lambda Runtime API host:port
)

var reasonWords = [...]string{
	ReasonUnknown:          "unknown",
	ReasonLoopback:         "loopback",
	ReasonPrivate:          "private",
	ReasonCGNAT:            "cgnat",
	ReasonMetadata:         "metadata",
	ReasonLinkLocal:        "link-local",
	ReasonMulticast:        "multicast",
	ReasonUnspecified:      "unspecified",
	ReasonBroadcast:        "broadcast",
	ReasonDocumentation:    "documentation",
	ReasonBenchmarking:     "benchmarking",
	ReasonReserved:         "reserved",
	ReasonIETFProtocol:     "ietf-protocol",
	Reason6to4:             "6to4",
	ReasonTeredo:           "teredo",
	ReasonNAT64Local:       "nat64-local",
	ReasonIPv4Compatible:   "ipv4-compatible",
	ReasonUniqueLocal:      "unique-local",
	ReasonSiteLocal:        "site-local",
	ReasonNotGlobalUnicast: "not-global-unicast",
	ReasonZoned:            "zoned",
	ReasonUnparsable:       "unparsable",
	ReasonNetwork:          "network",
	ReasonRuntimeAPI:       "runtime-api",
}

// String returns the reason's word, or "reason(N)" for an undefined value.
func (r Reason) String() string {
	if int(r) < len(reasonWords) {
		return reasonWords[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// MarshalText encodes the reason as its word.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
