package emutest

import "testing"

func TestSkip(t *testing.T) {
	t.Setenv(Env, "")
	ran := false
	t.Run("native", func(t *testing.T) {
		Skip(t, "a node")
		ran = true
	})
	if !ran {
		t.Fatal("skipped without an emulator")
	}
	t.Setenv(Env, "qemu-aarch64")
	ran = false
	t.Run("emulated", func(t *testing.T) {
		Skip(t, "a node")
		ran = true
	})
	if ran {
		t.Fatal("not skipped under an emulator")
	}
}
