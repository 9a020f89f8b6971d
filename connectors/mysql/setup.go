package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tributary-io/tributary/connect"
)

// server is what Open learned about the server.
type server struct {
	flavor      string // flavorMySQL or flavorMariaDB
	version     string
	fullMeta    bool   // binlog_row_metadata=FULL
	gtidMode    bool   // MySQL: gtid_mode=ON; MariaDB: always
	serverID    uint32 // the server's own server_id
	collations  map[uint64]string
	binlogFiles []string // SHOW BINARY LOGS, oldest first
}

// openDB opens a connection pool with the connector's session settings.
// When the server refuses the login for a reason no retry cures (an
// unknown database, access denied), the error is connect.Permanent;
// network errors and a server that is starting stay retryable, so that a
// server that comes up later is picked up. The pool's connections are
// watched for a dead network (deadconn.go) by the returned watchdog. The
// driver's own messages go to log (logging.go).
func openDB(ctx context.Context, cfg *mysql.Config, deadTimeout time.Duration, log *slog.Logger) (*sql.DB, *watchdog, error) {
	cfg = cfg.Clone()
	cfg.Logger = newDriverLogger(log)
	w := newWatchdog(cfg, deadTimeout)
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		// The DSN's settings are wrong: only the user can fix them.
		return nil, nil, connect.Permanent(fmt.Errorf("connect to %s: %s", redactedDSN(cfg), maskPassword(err.Error(), cfg.Passwd)))
	}
	db := sql.OpenDB(conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		msg := maskPassword(w.explain(err).Error(), cfg.Passwd)
		if strings.Contains(msg, "x509:") {
			msg += "; the server's certificate was not accepted: tls.mode=verify-full checks the DSN's host name against the certificate's names and its chain against tls.ca, verify-ca only the chain (tls.mode=required encrypts without checking)"
		}
		err2 := fmt.Errorf("connect to %s: %s", redactedDSN(cfg), msg)
		if loginRefused(err) {
			return nil, nil, connect.Permanent(err2)
		}
		return nil, nil, err2
	}
	return db, w, nil
}

// MySQL and MariaDB error numbers of a refused login.
const (
	erDBAccessDenied = 1044 // access denied for the user to the database
	erAccessDenied   = 1045 // access denied for the user (wrong password, no such user)
	erBadDB          = 1049 // unknown database
	erHostNotAllowed = 1130 // the user may not connect from this host
)

// loginRefused reports whether the server refused the login for a reason
// no retry cures: the database does not exist, or the user may not log in
// (to it, or from this host).
func loginRefused(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case erDBAccessDenied, erAccessDenied, erBadDB, erHostNotAllowed:
		return true
	}
	return false
}

func maskPassword(msg, pw string) string {
	if pw == "" {
		return msg
	}
	return strings.ReplaceAll(msg, pw, "********")
}

// globalVar reads a global server variable; "" when the server has none.
func globalVar(ctx context.Context, db *sql.DB, name string) (string, error) {
	var n, v sql.NullString
	err := db.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE '"+name+"'").Scan(&n, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return v.String, nil
}

// checkServer checks what row-based binlog capture needs from the server
// and the user, and says what to change when something is missing.
func checkServer(ctx context.Context, db *sql.DB) (*server, error) {
	srv := &server{flavor: flavorMySQL}
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&srv.version); err != nil {
		return nil, fmt.Errorf("read the server version: %w", err)
	}
	if strings.Contains(strings.ToLower(srv.version), "mariadb") {
		srv.flavor = flavorMariaDB
	}
	vars := map[string]string{}
	for _, name := range []string{"log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata", "gtid_mode", "server_id", "binlog_row_value_options"} {
		v, err := globalVar(ctx, db, name)
		if err != nil {
			return nil, err
		}
		vars[name] = v
	}
	restart := "in the server's configuration file ([mysqld] section) and restart the server"
	if v := strings.ToUpper(vars["log_bin"]); v != "ON" && v != "1" {
		return nil, connect.Permanent(fmt.Errorf("the binary log is off (log_bin=%s), but change capture reads it; set log_bin=ON (MySQL 8 has it on by default; MariaDB: log_bin=mysql-bin), binlog_format=ROW and binlog_row_image=FULL %s", vars["log_bin"], restart))
	}
	if v := strings.ToUpper(vars["binlog_format"]); v != "ROW" {
		return nil, connect.Permanent(fmt.Errorf("binlog_format is %s, but change capture needs ROW; run SET GLOBAL binlog_format = 'ROW'; (new sessions only) and set binlog_format=ROW %s", v, restart))
	}
	if v := strings.ToUpper(vars["binlog_row_image"]); v != "FULL" && v != "NOBLOB" {
		return nil, connect.Permanent(fmt.Errorf("binlog_row_image is %s, but change capture needs FULL (whole rows before and after each change; NOBLOB, which leaves out only unchanged BLOB and TEXT values, works too); run SET GLOBAL binlog_row_image = 'FULL'; and set binlog_row_image=FULL %s", v, restart))
	}
	if v := strings.ToUpper(vars["binlog_row_value_options"]); strings.Contains(v, "PARTIAL_JSON") {
		return nil, connect.Permanent(fmt.Errorf("binlog_row_value_options is %s: partial JSON updates cannot be turned into whole rows; run SET GLOBAL binlog_row_value_options = '';", v))
	}
	srv.fullMeta = strings.ToUpper(vars["binlog_row_metadata"]) == "FULL"
	srv.gtidMode = srv.flavor == flavorMariaDB || strings.ToUpper(vars["gtid_mode"]) == "ON"
	var id uint64
	fmt.Sscan(vars["server_id"], &id)
	srv.serverID = uint32(id)
	if err := checkGrants(ctx, db, srv); err != nil {
		return nil, err
	}
	var err error
	if srv.collations, err = loadCollations(ctx, db); err != nil {
		return nil, err
	}
	if srv.binlogFiles, err = binaryLogs(ctx, db); err != nil {
		return nil, err
	}
	return srv, nil
}

// checkGrants checks that the user can read the binlog: REPLICATION SLAVE
// to stream it, REPLICATION CLIENT to read its coordinates. MariaDB 10.5+
// names them BINLOG MONITOR and REPLICATION SLAVE (REPLICATION CLIENT is an
// alias of BINLOG MONITOR there).
func checkGrants(ctx context.Context, db *sql.DB, srv *server) error {
	var user string
	if err := db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&user); err != nil {
		return fmt.Errorf("read the current user: %w", err)
	}
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return fmt.Errorf("read the grants of %s: %w", user, err)
	}
	defer rows.Close()
	var grants []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return fmt.Errorf("read the grants of %s: %w", user, err)
		}
		grants = append(grants, strings.ToUpper(g))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the grants of %s: %w", user, err)
	}
	has := func(priv ...string) bool {
		for _, g := range grants {
			on := strings.Index(g, " ON *.*")
			if on < 0 {
				continue
			}
			privs := g[:on]
			if strings.Contains(privs, "ALL PRIVILEGES") {
				return true
			}
			for _, p := range priv {
				if strings.Contains(privs, p) {
					return true
				}
			}
		}
		return false
	}
	quoted := user
	if at := strings.LastIndex(user, "@"); at > 0 {
		quoted = "'" + user[:at] + "'@'" + user[at+1:] + "'"
	}
	var missing []string
	if !has("REPLICATION SLAVE", "REPLICATION REPLICA") {
		missing = append(missing, "REPLICATION SLAVE")
	}
	if !has("REPLICATION CLIENT", "BINLOG MONITOR", "SUPER") {
		missing = append(missing, "REPLICATION CLIENT")
	}
	if len(missing) > 0 {
		return connect.Permanent(fmt.Errorf("user %s lacks %s, which reading the binary log needs; run as an administrator: GRANT %s ON *.* TO %s;", user, strings.Join(missing, " and "), strings.Join(missing, ", "), quoted))
	}
	return nil
}

// binaryLogs lists the binlog files the server still has, oldest first.
func binaryLogs(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("list the binary logs (SHOW BINARY LOGS): %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var files []string
	for rows.Next() {
		vals := make([]any, len(cols))
		var name string
		vals[0] = &name
		for i := 1; i < len(cols); i++ {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			return nil, fmt.Errorf("list the binary logs: %w", err)
		}
		files = append(files, name)
	}
	return files, rows.Err()
}

// masterStatus returns the server's current binlog coordinates and, on
// MySQL with GTIDs, its executed GTID set.
func masterStatus(ctx context.Context, q querier) (coords, string, error) {
	rows, err := q.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 renamed it.
		rows, err = q.QueryContext(ctx, "SHOW BINARY LOG STATUS")
		if err != nil {
			return coords{}, "", fmt.Errorf("read the binlog position (SHOW MASTER STATUS): %w", err)
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return coords{}, "", err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return coords{}, "", err
		}
		return coords{}, "", errors.New("SHOW MASTER STATUS returned nothing: is the binary log on?")
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return coords{}, "", err
	}
	var c coords
	var gtids string
	for i, name := range cols {
		switch strings.ToLower(name) {
		case "file":
			c.File = vals[i].String
		case "position":
			var p uint64
			fmt.Sscan(vals[i].String, &p)
			c.Pos = uint32(p)
		case "executed_gtid_set":
			gtids = vals[i].String
		}
	}
	return c, gtids, nil
}

// mariaGTIDAt returns MariaDB's GTID position at binlog coordinates
// (BINLOG_GTID_POS).
func mariaGTIDAt(ctx context.Context, q querier, c coords) (string, error) {
	rows, err := q.QueryContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", c.File, c.Pos)
	if err != nil {
		return "", fmt.Errorf("read the GTID position at %s: %w", c, err)
	}
	defer rows.Close()
	var s sql.NullString
	if rows.Next() {
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
	}
	return s.String, rows.Err()
}
