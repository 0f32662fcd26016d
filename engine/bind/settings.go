package bind

// ServerSettings are PostgreSQL's read-only settings that drivers and
// tools read (SHOW, current_setting) to learn what server they talk to;
// nicflow reads SQL as PostgreSQL 16 does.
var ServerSettings = map[string]string{
	"server_version":              "16.0 (nicflow)",
	"server_version_num":          "160000",
	"server_encoding":             "UTF8",
	"client_encoding":             "UTF8",
	"integer_datetimes":           "on",
	"max_identifier_length":       "63",
	"is_superuser":                "on",
	"lc_collate":                  "C",
	"lc_ctype":                    "C",
	"standard_conforming_strings": "on",
	"datestyle":                   "ISO, MDY",
	"intervalstyle":               "postgres",
	"search_path":                 `"$user", public`,
	"block_size":                  "8192",
	// The most columns an index may have (PostgreSQL's INDEX_MAX_KEYS):
	// pgjdbc's getImportedKeys reads it.
	"max_index_keys": "32",
}

// settingValue is current_setting(name): the session time zone or a
// server setting.
func (b *binder) settingValue(name string) (string, bool) {
	if name == "timezone" {
		if b.zone == "" {
			return "UTC", true
		}
		return b.zone, true
	}
	v, ok := ServerSettings[name]
	return v, ok
}
