//go:build !linux

package sensor

func probe() []Feature {
	return []Feature{{Name: "Linux", State: FeatureMissing, Required: true,
		Needed: "polygraph records with eBPF on Linux; here it can only read sessions and transcripts"}}
}
