package guard

import "testing"

func TestParseCgroup2Root(t *testing.T) {
	tests := []struct {
		name, mountinfo, want string
		wantErr               bool
	}{
		{
			name: "hybrid",
			mountinfo: "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
				"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
				"41 31 0:38 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
			want: "/sys/fs/cgroup/unified",
		},
		{
			name:      "unified",
			mountinfo: "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n",
			want:      "/sys/fs/cgroup",
		},
		{
			name:      "escaped mount point",
			mountinfo: "30 23 0:26 / /mnt/cg\\040two rw - cgroup2 none rw\n",
			want:      "/mnt/cg two",
		},
		{
			name:      "v1 only",
			mountinfo: "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n",
			wantErr:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCgroup2Root([]byte(tt.mountinfo))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseCgroup2Root = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
