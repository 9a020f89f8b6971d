package webhook

import (
	"net"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// The connector's spec masks the credentials in its settings wherever the
// worker shows them (REST, status): a sensitive header's credential, a
// URL's credential-like query parameters and password.
func TestSpec_RedactsCredentialsInSettings(t *testing.T) {
	got := spec().Mask(map[string]string{
		"url":     "https://user:pw123456@api.example.com/v1/contacts?hapikey=SECRETKEY123&api_key=AK123456&limit=10",
		"headers": "Authorization: Bearer TOKEN12345\nX-Trace: on, X-Api-Token: tok-98765",
		"method":  "POST",
	})
	for _, secret := range []string{"SECRETKEY123", "AK123456", "pw123456", "TOKEN12345", "tok-98765"} {
		for k, v := range got {
			if strings.Contains(v, secret) {
				t.Errorf("%s shows %s: %q", k, secret, v)
			}
		}
	}
	for k, want := range map[string]string{
		"url":     "https://user:" + connect.Masked + "@api.example.com/v1/contacts?hapikey=" + connect.Masked + "&api_key=" + connect.Masked + "&limit=10",
		"headers": "Authorization: Bearer " + connect.Masked + "\nX-Trace: on, X-Api-Token: " + connect.Masked,
		"method":  "POST",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// A delivery error names the URL; its key does not reach the task's trace
// or a dead letter's __connect.errors.exception.message.
func TestSink_ErrorsMaskURLCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every request fails with the URL in the error
	s := open(t, fast(map[string]string{"url": "http://" + addr + "/x?hapikey=SECRETKEY123", "max.attempts": "1"}))
	err = s.Write(t.Context(), events(keys(1), 1))
	if err == nil {
		t.Fatal("a delivery to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "SECRETKEY123") {
		t.Errorf("error shows the key: %v", err)
	}
	if !strings.Contains(err.Error(), "hapikey="+connect.Masked) {
		t.Errorf("error %q does not show where the key was masked", err)
	}
}
