/*
 * MariaDB Connector/C: a prepared statement whose result set ended in an error
 * (here a deadlock reported after the metadata, in mysql_stmt_store_result) hangs
 * on its next mysql_stmt_execute once mysql_stmt_free_result has run, which is what
 * Diesel's MysqlConnection does after every statement it keeps in its cache.
 *
 * madb_reset_stmt (MADB_RESET_BUFFER) sets MYSQL_STMT_USER_FETCHING after
 * default_rset_handler even when that refused (the connection is already
 * MYSQL_STATUS_READY), so the next execute sees a state between WAITING_USE_OR_STORE
 * and FETCH_DONE with no stored rows and calls db_stmt_flush_unbuffered, which reads
 * from a socket the server sends nothing on: the client waits for good, its
 * transaction open, while the server shows the connection as Sleep.
 *
 * Seen with libmariadb 3.3.20 (Debian 12's 10.11.19 package) and the 3.3 branch
 * built from source, against MariaDB 10.11.19; the code is the same in the 3.4 branch.
 *
 *   gcc -o /tmp/stmt-hang tools/mariadb-stmt-hang.c $(mariadb_config --cflags --libs) -lpthread
 *   /tmp/stmt-hang          # without mysql_stmt_free_result: every round completes
 *   FREE=1 /tmp/stmt-hang   # with it: "HANG" after the first deadlock, exit code 3
 *
 * It uses the table repro_stmt_hang in the database test on 127.0.0.1:3306 (root,
 * no password) and the sequence engine (seq_1_to_200).
 */
#include <mysql.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static MYSQL *other_conn;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "HANG: mysql_stmt_execute did not return in 10 s\n";
  if (write(1, msg, sizeof msg - 1) < 0) _exit(4);
  _exit(3);
}

static MYSQL *connect_test(void) {
  MYSQL *m = mysql_init(NULL);
  if (!mysql_real_connect(m, "127.0.0.1", "root", "", "test", 3306, NULL, 0)) {
    fprintf(stderr, "connect: %s\n", mysql_error(m));
    exit(1);
  }
  return m;
}

static void query(MYSQL *m, const char *sql) {
  if (mysql_query(m, sql)) fprintf(stderr, "(%s: %s)\n", sql, mysql_error(m));
  MYSQL_RES *r = mysql_store_result(m);
  if (r) mysql_free_result(r);
}

/* the other transaction: after A waits on row 2 (which it holds), it asks for row 1,
   which A holds; it has written many rows, so InnoDB rolls A back instead */
static void *other(void *arg) {
  (void)arg;
  usleep(200000);
  query(other_conn, "SELECT * FROM repro_stmt_hang WHERE id = 1 FOR UPDATE");
  return NULL;
}

int main(void) {
  signal(SIGALRM, on_alarm);
  setvbuf(stdout, NULL, _IONBF, 0);
  MYSQL *a = connect_test();
  other_conn = connect_test();
  query(a, "DROP TABLE IF EXISTS repro_stmt_hang");
  query(a, "CREATE TABLE repro_stmt_hang (id INT PRIMARY KEY, v INT) ENGINE=InnoDB");
  query(a, "INSERT INTO repro_stmt_hang SELECT seq, seq FROM seq_1_to_200");

  MYSQL_STMT *s = mysql_stmt_init(a);
  const char *sql = "SELECT id, v FROM repro_stmt_hang WHERE id >= ? AND id < 3 ORDER BY id FOR UPDATE";
  if (mysql_stmt_prepare(s, sql, strlen(sql))) {
    fprintf(stderr, "prepare: %s\n", mysql_stmt_error(s));
    return 1;
  }
  int from = 1;
  MYSQL_BIND p;
  memset(&p, 0, sizeof p);
  p.buffer_type = MYSQL_TYPE_LONG;
  p.buffer = &from;
  int free_result = getenv("FREE") != NULL;

  for (int round = 0; round < 3; round++) {
    query(a, "BEGIN");
    query(other_conn, "BEGIN");
    query(other_conn, "UPDATE repro_stmt_hang SET v = v + 1 WHERE id > 100");
    query(other_conn, "SELECT * FROM repro_stmt_hang WHERE id = 2 FOR UPDATE");
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    /* A locks row 1, waits on row 2: the deadlock arrives after the metadata */
    mysql_stmt_bind_param(s, &p);
    int e = mysql_stmt_execute(s);
    printf("round %d: execute %d, state %d\n", round, e, (int)s->state);
    if (!e) {
      int st = mysql_stmt_store_result(s);
      printf("  store_result %d: %u %s (state %d)\n", st, mysql_stmt_errno(s),
             mysql_stmt_error(s), (int)s->state);
      if (free_result) {
        mysql_stmt_free_result(s);
        printf("  after mysql_stmt_free_result: state %d, rows %p\n", (int)s->state,
               (void *)s->result.data);
      }
    }
    pthread_join(t, NULL);
    query(a, "ROLLBACK");
    query(other_conn, "ROLLBACK");

    /* the same statement again, nothing in its way */
    alarm(10);
    mysql_stmt_bind_param(s, &p);
    e = mysql_stmt_execute(s);
    int st = e ? -1 : mysql_stmt_store_result(s);
    alarm(0);
    printf("  again: execute %d, store_result %d, %llu rows\n", e, st,
           (unsigned long long)mysql_stmt_num_rows(s));
    mysql_stmt_free_result(s);
  }
  query(a, "DROP TABLE IF EXISTS repro_stmt_hang");
  return 0;
}
