package template

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// keyUseActions are the KMS actions that use a key's material: what no
// principal but the two functions' roles may be granted on ServerUrlKey.
var keyUseActions = []string{
	"kms:Encrypt", "kms:Decrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo",
	"kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext", "kms:GenerateDataKeyPair",
	"kms:GenerateDataKeyPairWithoutPlaintext", "kms:GenerateMac", "kms:VerifyMac",
	"kms:Sign", "kms:Verify", "kms:DeriveSharedSecret",
}

// kmsActions is catalog.KMSAPI's methods as IAM actions.
func kmsActions() []string {
	api := reflect.TypeFor[catalog.KMSAPI]()
	var out []string
	for i := range api.NumMethod() {
		out = append(out, "kms:"+api.Method(i).Name)
	}
	return out
}

func sortedStrings(v any) []string {
	var out []string
	for _, a := range oneOrMany(v) {
		s, _ := a.(string)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// roleArns returns the logical ids of the !GetAtt <Role>.Arn principals.
func roleArns(principal any) []string {
	var ids []string
	for _, p := range oneOrMany(path(principal, "AWS")) {
		if id, attr, _ := refName(p); attr == "Arn" {
			ids = append(ids, id)
		} else {
			ids = append(ids, "?")
		}
	}
	slices.Sort(ids)
	return ids
}

// covers reports whether the IAM action pattern a (a trailing * at most)
// covers action.
func covers(a, action string) bool {
	if prefix, ok := strings.CutSuffix(a, "*"); ok {
		return strings.HasPrefix(action, prefix)
	}
	return a == action
}

// TestServerUrlKey pins the key that seals server URLs: rotation on, the
// account root administering it without using it, only the two functions'
// roles encrypting and decrypting (with a catalog_id context), the IAM
// policy that lets them, and the key on both functions' environment.
func TestServerUrlKey(t *testing.T) {
	d := realTemplate(t)
	key := d.resources("AWS::KMS::Key")["ServerUrlKey"]
	if key == nil {
		t.Fatal("no AWS::KMS::Key ServerUrlKey")
	}
	if path(key, "Properties", "EnableKeyRotation") != true {
		t.Errorf("EnableKeyRotation %v, want true", path(key, "Properties", "EnableKeyRotation"))
	}
	roles := []string{"CallRole", "DiscoverRole"}
	administered := false
	for _, st := range oneOrMany(path(key, "Properties", "KeyPolicy", "Statement")) {
		actions := sortedStrings(path(st, "Action"))
		sid := path(st, "Sid")
		if path(st, "Effect") != "Allow" {
			continue
		}
		if sub, _ := path(st, "Principal", "AWS", "Fn::Sub").(string); strings.HasSuffix(sub, ":root") {
			administered = slices.Contains(actions, "kms:PutKeyPolicy") || slices.Contains(actions, "kms:Put*")
			for _, a := range actions {
				for _, use := range keyUseActions {
					if covers(a, use) {
						t.Errorf("statement %v lets the account root use the key: %s covers %s", sid, a, use)
					}
				}
			}
			continue
		}
		if diff := cmp.Diff(roles, roleArns(path(st, "Principal"))); diff != "" {
			t.Errorf("statement %v principals (-want +got):\n%s", sid, diff)
		}
		want := kmsActions()
		slices.Sort(want)
		if diff := cmp.Diff(want, actions); diff != "" {
			t.Errorf("statement %v actions (-want +got):\n%s", sid, diff)
		}
		if path(st, "Condition", "Null", "kms:EncryptionContext:"+catalog.SealContextKey) != "false" {
			t.Errorf("statement %v does not require the %s encryption context: %v", sid, catalog.SealContextKey, path(st, "Condition"))
		}
	}
	if !administered {
		t.Error("no key policy statement lets the account root administer the key")
	}

	pol := d.resources("AWS::IAM::Policy")["ServerUrlKeyPolicy"]
	var polRoles []string
	for _, r := range oneOrMany(path(pol, "Properties", "Roles")) {
		id, _, _ := refName(r)
		polRoles = append(polRoles, id)
	}
	slices.Sort(polRoles)
	if diff := cmp.Diff(roles, polRoles); diff != "" {
		t.Errorf("ServerUrlKeyPolicy roles (-want +got):\n%s", diff)
	}
	sts := oneOrMany(path(pol, "Properties", "PolicyDocument", "Statement"))
	if len(sts) != 1 {
		t.Fatalf("ServerUrlKeyPolicy statements %v, want one", sts)
	}
	want := kmsActions()
	slices.Sort(want)
	if diff := cmp.Diff(want, sortedStrings(path(sts[0], "Action"))); diff != "" {
		t.Errorf("ServerUrlKeyPolicy actions (-want +got):\n%s", diff)
	}
	if id, attr, _ := refName(path(sts[0], "Resource")); id != "ServerUrlKey" || attr != "Arn" {
		t.Errorf("ServerUrlKeyPolicy resource %v, want !GetAtt ServerUrlKey.Arn", path(sts[0], "Resource"))
	}

	env := path(d, "Globals", "Function", "Environment", "Variables", startup.EnvSealKeyID)
	if id, attr, _ := refName(env); id != "ServerUrlKey" || attr != "" {
		t.Errorf("Globals %s = %v, want !Ref ServerUrlKey", startup.EnvSealKeyID, env)
	}
}
