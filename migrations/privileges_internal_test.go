package migrations

import "testing"

// TestGlobalSuper reads SHOW GRANTS lines as MariaDB and MySQL 8 print them.
func TestGlobalSuper(t *testing.T) {
	tests := []struct {
		name, grant string
		want        bool
	}{
		{"mariadb stack user", "GRANT PROCESS, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `herald`@`127.0.0.1` IDENTIFIED BY PASSWORD '*B9C5'", false},
		{"all on the databases only", "GRANT ALL PRIVILEGES ON `herald%`.* TO `herald`@`127.0.0.1`", false},
		{"super among others", "GRANT SELECT, SUPER, PROCESS ON *.* TO `admin`@`localhost`", true},
		{"all privileges", "GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION", true},
		{"mysql 8 dynamic privileges", "GRANT SYSTEM_VARIABLES_ADMIN,SET_USER_ID ON *.* TO `app`@`%`", false},
		{"super on one database is no super", "GRANT SUPER ON `app`.* TO `app`@`%`", false},
		{"a role", "GRANT `dba` TO `app`@`%`", false},
		{"lower case", "grant super on *.* to 'app'@'%'", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := globalSuper(tt.grant); got != tt.want {
				t.Errorf("globalSuper(%q) = %v, want %v", tt.grant, got, tt.want)
			}
		})
	}
}

// TestRefusesTriggers: only the binary log, the variable off and no SUPER
// together make CREATE TRIGGER fail with ERROR 1419.
func TestRefusesTriggers(t *testing.T) {
	tests := []struct {
		name string
		srv  triggerServer
		want bool
	}{
		{"no binary log", triggerServer{logBin: false}, false},
		{"binary log, variable off, no super", triggerServer{logBin: true}, true},
		{"binary log, variable on", triggerServer{logBin: true, trustCreators: true}, false},
		{"binary log, super", triggerServer{logBin: true, super: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.srv.refusesTriggers(); got != tt.want {
				t.Errorf("refusesTriggers() = %v, want %v", got, tt.want)
			}
		})
	}
}
