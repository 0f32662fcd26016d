// NicflowJdbc runs query scripts through PostgreSQL's JDBC driver (pgjdbc)
// for cmd/nicflow's client tests. Arguments: host:port [user password].
// Standard input: scripts, each ending with a line holding only U+001E;
// statements of a script are separated by a line holding only U+001D.
// Standard output, for each script: the last result's column names and
// rows (fields separated by U+001F, NULL empty), or U+0015 SQLSTATE and
// the message, then a line holding only U+001E. A script "!tables" lists
// DatabaseMetaData.getTables (name, type), "!columns T" getColumns of T
// (name, type name, nullable), "!primarykeys T" getPrimaryKeys (column,
// position, name), "!indexes T" getIndexInfo (index, non-unique, column,
// position), "!importedkeys T" getImportedKeys (referenced table and
// column, column, position, name), as JDBC tools browse a database.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import java.util.*;

public class NicflowJdbc {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", args.length > 1 ? args[1] : "nicflow");
        if (args.length > 2) p.setProperty("password", args[2]);
        p.setProperty("sslmode", "disable");
        // Server-side prepared statements from the first execution on.
        p.setProperty("prepareThreshold", "1");
        Connection c = DriverManager.getConnection("jdbc:postgresql://" + args[0] + "/nicflow", p);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        StringBuilder script = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.equals("\u001e")) {
                script.append(line).append('\n');
                continue;
            }
            try {
                run(c, script.toString(), out);
            } catch (SQLException e) {
                out.println("\u0015" + e.getSQLState() + " " + e.getMessage().replace('\n', ' '));
            }
            out.println("\u001e");
            out.flush();
            script.setLength(0);
        }
        c.close();
    }

    static void run(Connection c, String script, PrintStream out) throws SQLException {
        String s0 = script.trim();
        if (s0.startsWith("!")) {
            DatabaseMetaData md = c.getMetaData();
            String[] w = s0.split(" ", 2);
            String t = w.length > 1 ? w[1] : null;
            String[] cols;
            ResultSet rs;
            switch (w[0]) {
                case "!tables":
                    cols = new String[]{"TABLE_NAME", "TABLE_TYPE"};
                    rs = md.getTables(null, null, "%", new String[]{"TABLE", "VIEW"});
                    break;
                case "!columns":
                    cols = new String[]{"COLUMN_NAME", "TYPE_NAME", "NULLABLE"};
                    rs = md.getColumns(null, null, t, "%");
                    break;
                case "!primarykeys":
                    cols = new String[]{"COLUMN_NAME", "KEY_SEQ", "PK_NAME"};
                    rs = md.getPrimaryKeys(null, null, t);
                    break;
                case "!indexes":
                    cols = new String[]{"INDEX_NAME", "NON_UNIQUE", "COLUMN_NAME", "ORDINAL_POSITION"};
                    rs = md.getIndexInfo(null, null, t, false, false);
                    break;
                case "!importedkeys":
                    cols = new String[]{"PKTABLE_NAME", "PKCOLUMN_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "FK_NAME"};
                    rs = md.getImportedKeys(null, null, t);
                    break;
                default:
                    throw new SQLException("unknown command " + w[0], "42000");
            }
            out.println(String.join("\u001f", cols));
            try (ResultSet r = rs) {
                while (r.next()) {
                    StringBuilder b = new StringBuilder();
                    for (int i = 0; i < cols.length; i++) {
                        if (i > 0) b.append('\u001f');
                        b.append(r.getString(cols[i]));
                    }
                    out.println(b);
                }
            }
            return;
        }
        List<String> lines = new ArrayList<>();
        for (String s : script.split("\u001d\n")) {
            if (s.isBlank()) continue;
            try (PreparedStatement st = c.prepareStatement(s)) {
                if (!st.execute()) continue;
                try (ResultSet rs = st.getResultSet()) {
                    ResultSetMetaData md = rs.getMetaData();
                    lines.clear();
                    StringBuilder b = new StringBuilder();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        if (i > 1) b.append('\u001f');
                        b.append(md.getColumnLabel(i));
                    }
                    lines.add(b.toString());
                    while (rs.next()) {
                        b.setLength(0);
                        for (int i = 1; i <= md.getColumnCount(); i++) {
                            if (i > 1) b.append('\u001f');
                            String v = rs.getString(i);
                            if (v != null) b.append(v);
                        }
                        lines.add(b.toString());
                    }
                }
            }
        }
        for (String l : lines) out.println(l);
    }
}
