/*
 * jevgate from C: crash safety, a small version of tests/task_crash.rs (R-TSK-RCPT, R-RUN).
 * The parent serves a loopback page with five named buttons (a thread of its own: a click sends
 * `/hit?b=NAME` only when it is real, `event.isTrusted`, and appends " pressed" to the label) and
 * counts the hits per button. Then, ROUNDS times: fork() a child that opens a gateway (local
 * Jev provider) on a fresh data directory and runs the task "1. click Alpha … 5. click Echo";
 * the child writes a byte to a pipe at the task's first outcome line (the start page is open),
 * the parent SIGKILLs it a random 0–600 ms later (the seed is printed; `argv[2]` or
 * JEVGATE_CRASH_SEED replays it), waits until no process of the dead child is left (its
 * Chromium dies with its pipe), reopens the directory with a gateway of its own (startup
 * recovery) and checks with jevgate_task_list / jevgate_task_receipts: each button clicked at
 * most once and the clicks a prefix of the steps, no click without a committed page_click
 * receipt, every `interrupted` request reported BROWSER_EXECUTION_INTERRUPTED, no task
 * `queued`/`running`, and nothing clicked after reopening.
 * Exits non-zero on the first broken promise (the test suite runs it).
 *
 * fork() and threads: the only thread of the parent at a fork is the server's (no jevgate
 * thread: the parent's gateway of each round is closed and freed before the next fork, and the
 * parent checks that), and the child never touches the server. The parent is a child subreaper,
 * so the dead child's orphans are reaped here. Linux only (prctl, /proc).
 */
#define _GNU_SOURCE
#include "jevgate.h"
#include "expect.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 3
#define STEPS 5
#define MAX_DELAY_MS 600
static const char *BUTTONS[STEPS] = {"Alpha", "Bravo", "Charlie", "Delta", "Echo"};
/* Browser tasks and step lists are off by default: turned on here, with the local evaluator. */
static const char *CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\",\"features\":"
    "{\"browserTasks\":{\"enabled\":true},\"browserSteps\":{\"enabled\":true}}}}}";
static const char *OWNER = "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"conv-crash\"}";
#define MARK_ENV "JEVGATE_CRASH_MARK"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- The loopback server: one thread, poll() over a few connections, static buffers only. ---- */

static atomic_int hits[STEPS];       /* real clicks per button */
static atomic_int untrusted_hits;    /* a click a script made (must stay 0) */
static int listen_fd = -1, stop_pipe[2] = {-1, -1};
static int port;

#define MAX_CONN 32
struct conn {
  int fd;
  size_t len;
  char buf[2048];
};
static struct conn conns[MAX_CONN];

static void page(char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "<!doctype html><meta charset=\"utf-8\"><title>Crash</title><h1>Buttons</h1>");
  for (int i = 0; i < STEPS && n < cap; i++) {
    n += (size_t)snprintf(out + n, cap - n,
                          "<p><button onclick=\"fetch(event.isTrusted?'/hit?b=%s':'/hit?b=untrusted',"
                          "{keepalive:true});this.textContent+=' pressed'\">%s</button></p>",
                          BUTTONS[i], BUTTONS[i]);
  }
}

static void respond(int fd, const char *req) {
  static char body[2048], head[256];
  const char *status = "200 OK";
  body[0] = '\0';
  if (strncmp(req, "GET /hit?b=", 11) == 0) {
    const char *name = req + 11;
    size_t len = strcspn(name, " &");
    if (len == 9 && strncmp(name, "untrusted", 9) == 0) atomic_fetch_add(&untrusted_hits, 1);
    for (int i = 0; i < STEPS; i++) {
      if (strlen(BUTTONS[i]) == len && strncmp(name, BUTTONS[i], len) == 0) atomic_fetch_add(&hits[i], 1);
    }
  } else if (strncmp(req, "GET /page ", 10) == 0) {
    page(body, sizeof body);
  } else {
    status = "404 Not Found";
  }
  size_t blen = strlen(body);
  int h = snprintf(head, sizeof head,
                   "HTTP/1.1 %s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %zu\r\n"
                   "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                   status, blen);
  (void)send(fd, head, (size_t)h, MSG_NOSIGNAL);
  (void)send(fd, body, blen, MSG_NOSIGNAL);
}

static atomic_int serving; /* the thread is set up and waits in poll() */

static void *serve(void *arg) {
  (void)arg;
  for (int i = 0; i < MAX_CONN; i++) conns[i].fd = -1;
  atomic_store(&serving, 1);
  for (;;) {
    struct pollfd pfd[MAX_CONN + 2];
    int slot[MAX_CONN + 2];
    nfds_t n = 0;
    pfd[n] = (struct pollfd){stop_pipe[0], POLLIN, 0};
    slot[n++] = -2;
    pfd[n] = (struct pollfd){listen_fd, POLLIN, 0};
    slot[n++] = -1;
    for (int i = 0; i < MAX_CONN; i++) {
      if (conns[i].fd >= 0) {
        pfd[n] = (struct pollfd){conns[i].fd, POLLIN, 0};
        slot[n++] = i;
      }
    }
    if (poll(pfd, n, -1) < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    if (pfd[0].revents) break;
    for (nfds_t k = 1; k < n; k++) {
      if (!pfd[k].revents) continue;
      if (slot[k] == -1) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        int i = 0;
        while (i < MAX_CONN && conns[i].fd >= 0) i++;
        if (i == MAX_CONN) {
          close(fd);
          continue;
        }
        conns[i].fd = fd;
        conns[i].len = 0;
        continue;
      }
      struct conn *c = &conns[slot[k]];
      ssize_t got = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
      if (got > 0) {
        c->len += (size_t)got;
        c->buf[c->len] = '\0';
        if (strstr(c->buf, "\r\n\r\n") == NULL && c->len < sizeof c->buf - 1) continue;
        respond(c->fd, c->buf);
      }
      close(c->fd);
      c->fd = -1;
    }
  }
  for (int i = 0; i < MAX_CONN; i++) {
    if (conns[i].fd >= 0) close(conns[i].fd);
  }
  return NULL;
}

static int start_server(pthread_t *thread) {
  listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof addr;
  if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listen_fd, 64) != 0 ||
      getsockname(listen_fd, (struct sockaddr *)&addr, &alen) != 0 || pipe2(stop_pipe, O_CLOEXEC) != 0)
    return -1;
  port = ntohs(addr.sin_port);
  if (pthread_create(thread, NULL, serve, NULL) != 0) return -1;
  /* The first fork waits until the new thread is past its start-up (no lock of its held). */
  while (!atomic_load(&serving)) sleep_ms(1);
  return 0;
}

static void snapshot(int out[STEPS + 1]) {
  for (int i = 0; i < STEPS; i++) out[i] = atomic_load(&hits[i]);
  out[STEPS] = atomic_load(&untrusted_hits);
}

/* ---- A small JSON walker: just enough structure to read keys at the right depth. ---- */

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
  return p;
}

/* Skips a string starting at its opening quote; NULL when malformed. */
static const char *skip_string(const char *p) {
  if (*p != '"') return NULL;
  for (p++; *p && *p != '"'; p++) {
    if (*p == '\\' && *++p == '\0') return NULL;
  }
  return *p == '"' ? p + 1 : NULL;
}

static const char *skip_value(const char *p, int depth) {
  p = ws(p);
  if (depth > 64) return NULL;
  if (*p == '"') return skip_string(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        p = skip_string(ws(p));
        if (!p || *(p = ws(p)) != ':') return NULL;
        p++;
      }
      p = skip_value(p, depth + 1);
      if (!p) return NULL;
      p = ws(p);
      if (*p == ',') {
        p++;
        continue;
      }
      return *p == close ? p + 1 : NULL;
    }
  }
  while (*p && strchr(",}] \n\r\t", *p) == NULL) p++; /* number, true, false, null */
  return p;
}

/* Calls `each(user, element)` for every element of the array at `p`; -1 when malformed. */
static int each_element(const char *p, int (*each)(void *, const char *), void *user) {
  p = ws(p);
  if (*p != '[') return -1;
  p = ws(p + 1);
  if (*p == ']') return 0;
  for (;;) {
    if (each(user, p) != 0) return -1;
    if (!(p = skip_value(p, 0))) return -1;
    p = ws(p);
    if (*p == ']') return 0;
    if (*p++ != ',') return -1;
  }
}

/* The value of `key` in the object at `p` (a pointer to its first character), or NULL. */
static const char *member(const char *p, const char *key) {
  p = ws(p);
  if (*p != '{') return NULL;
  p = ws(p + 1);
  size_t klen = strlen(key);
  while (*p == '"') {
    const char *end = skip_string(p);
    if (!end) return NULL;
    int match = (size_t)(end - p) == klen + 2 && strncmp(p + 1, key, klen) == 0;
    p = ws(end);
    if (*p++ != ':') return NULL;
    p = ws(p);
    if (match) return p;
    if (!(p = skip_value(p, 0))) return NULL;
    p = ws(p);
    if (*p == ',') p = ws(p + 1);
  }
  return NULL;
}

/* Whether `key` of the object at `p` is the string `want` ("null" for a JSON null). */
static int member_is(const char *p, const char *key, const char *want) {
  const char *v = member(p, key);
  if (!v) return 0;
  size_t n = strlen(want);
  if (strcmp(want, "null") == 0) return strncmp(v, "null", 4) == 0;
  return v[0] == '"' && strncmp(v + 1, want, n) == 0 && v[n + 1] == '"';
}

/* ---- The checks on a reopened directory. ---- */

struct tally {
  int tasks, busy, bad_task_reason, malformed;
  int requests, interrupted, bad_reason, running_requests;
  int click_ops, committed_clicks, done_clicks, dispatched_ops, last_is_click;
  char task_id[64];
};

static int on_operation(void *user, const char *op) {
  struct tally *t = user;
  int click = member_is(op, "tool", "page_click");
  t->last_is_click = click;
  if (member_is(op, "status", "dispatched")) t->dispatched_ops++;
  if (!click) return 0;
  t->click_ops++;
  if (!member_is(op, "status", "not_executed")) t->committed_clicks++;
  if (member_is(op, "status", "done")) t->done_clicks++;
  return 0;
}

static int on_request(void *user, const char *req) {
  struct tally *t = user;
  t->requests++;
  if (member_is(req, "state", "running")) t->running_requests++;
  if (member_is(req, "state", "interrupted")) {
    t->interrupted++;
    if (!member_is(req, "reason", "BROWSER_EXECUTION_INTERRUPTED")) t->bad_reason++;
  }
  const char *ops = member(req, "operations");
  if (!ops || each_element(ops, on_operation, t) != 0) t->malformed++;
  return 0;
}

static int on_task(void *user, const char *task) {
  struct tally *t = user;
  t->tasks++;
  if (member_is(task, "state", "running") || member_is(task, "state", "queued")) t->busy++;
  /* A task recovery stopped (failed / needs_reconciliation) names why. */
  if ((member_is(task, "state", "failed") || member_is(task, "state", "needs_reconciliation")) &&
      !member_is(task, "reason", "BROWSER_EXECUTION_INTERRUPTED"))
    t->bad_task_reason++;
  const char *id = member(task, "id");
  const char *end = id ? skip_string(id) : NULL;
  if (!end || (size_t)(end - id) - 2 >= sizeof t->task_id) {
    t->malformed++;
    return 0;
  }
  memcpy(t->task_id, id + 1, (size_t)(end - id) - 2);
  t->task_id[(size_t)(end - id) - 2] = '\0';
  return 0;
}

#define CHECK(c, ...)                                     \
  do {                                                    \
    if (!(c)) {                                           \
      fprintf(stderr, "round %d: broken: %s: ", round, #c); \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      failures++;                                         \
    }                                                     \
  } while (0)

static char code_buf[64];
static const char *code_of(jevgate_error *err) {
  code_buf[0] = '\0';
  if (err) {
    snprintf(code_buf, sizeof code_buf, "%s", jevgate_error_code(err));
    jevgate_error_free(err);
  }
  return code_buf;
}

/* Reads the directory through a fresh gateway and checks every promise; returns real clicks. */
static int check_round(int round, const char *dir, const int clicked[STEPS + 1]) {
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(dir, CONFIG, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "round %d: reopen: %s\n", round, code_of(err));
    failures++;
    return 0;
  }
  int reopened[STEPS + 1];
  snapshot(reopened);
  /* No button twice, no script click, and the clicks are the steps' buttons in order. */
  int c = 0;
  while (c < STEPS && clicked[c] >= 1) c++;
  for (int i = 0; i < STEPS; i++) CHECK(clicked[i] <= 1, "%s clicked %d times", BUTTONS[i], clicked[i]);
  for (int i = c; i < STEPS; i++) CHECK(clicked[i] == 0, "%s clicked after a gap", BUTTONS[i]);
  CHECK(clicked[STEPS] == 0, "%d untrusted clicks", clicked[STEPS]);

  struct tally t;
  memset(&t, 0, sizeof t);
  char *list = NULL, *receipts = NULL;
  if (jevgate_task_list(gw, OWNER, &list, &err) != JEVGATE_OK) {
    fprintf(stderr, "round %d: task_list: %s\n", round, code_of(err));
    failures++;
  } else {
    CHECK(each_element(list, on_task, &t) == 0 && t.malformed == 0, "task list: %s", list);
    CHECK(t.tasks <= 1, "%d tasks in a fresh directory", t.tasks);
    CHECK(t.busy == 0, "a task busy after recovery: %s", list);
    CHECK(t.bad_task_reason == 0, "a stopped task without BROWSER_EXECUTION_INTERRUPTED: %s", list);
    if (t.tasks == 0) CHECK(c == 0, "%d clicks without a task", c);
  }
  if (t.tasks == 1) {
    if (jevgate_task_receipts(gw, OWNER, t.task_id, &receipts, &err) != JEVGATE_OK) {
      fprintf(stderr, "round %d: task_receipts: %s\n", round, code_of(err));
      failures++;
    } else {
      CHECK(each_element(receipts, on_request, &t) == 0 && t.malformed == 0, "receipts unreadable");
      /* No click without a committed receipt; no settled `done` click the server never saw
       * (except the very last operation's beacon, which a browser dying within milliseconds
       * of the click may not have sent). */
      CHECK(c <= t.committed_clicks, "clicks seen %d > committed click receipts %d", c, t.committed_clicks);
      CHECK(t.done_clicks <= c + t.last_is_click, "done clicks %d, seen %d", t.done_clicks, c);
      CHECK(t.bad_reason == 0, "%d interrupted requests without BROWSER_EXECUTION_INTERRUPTED", t.bad_reason);
      CHECK(t.running_requests == 0, "a request still running after recovery");
      CHECK(t.dispatched_ops == 0, "an operation left `dispatched` after recovery");
    }
  }
  printf("round %d: task %s, %d request(s), %d interrupted, click receipts %d (committed %d, done %d), "
         "clicks seen %d\n",
         round, t.tasks ? "listed" : "never committed", t.requests, t.interrupted, t.click_ops, t.committed_clicks,
         t.done_clicks, c);
  jevgate_string_free(list);
  jevgate_string_free(receipts);
  /* Nothing is re-sent after reopening (recovery resumes nothing; a short window). */
  sleep_ms(200);
  int later[STEPS + 1];
  snapshot(later);
  CHECK(memcmp(later, reopened, sizeof later) == 0, "a click after reopening");
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return c;
}

/* ---- Processes: the dead child's leftovers, and this process's threads. ---- */

/* Live (not zombie) processes whose environment carries MARK_ENV=mark; reaps adopted zombies. */
static int marked(const char *mark) {
  char needle[128];
  snprintf(needle, sizeof needle, MARK_ENV "=%s", mark);
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  int found = 0;
  DIR *proc = opendir("/proc");
  if (!proc) return 0;
  struct dirent *e;
  static char env[65536];
  while ((e = readdir(proc)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300];
    snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
    FILE *f = fopen(path, "re");
    if (!f) continue;
    size_t n = fread(env, 1, sizeof env - 1, f);
    fclose(f);
    env[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
      if (strcmp(env + i, needle) == 0) {
        found++;
        break;
      }
    }
  }
  closedir(proc);
  return found;
}

static int threads(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* ---- The child: runs the task until it is killed. Never returns. ---- */

static int started_fd = -1;
static atomic_int said_started;

/* The first outcome line (the start page is open): the run is under way. */
static void on_progress(void *user_data, const char *progress_json) {
  (void)user_data;
  (void)progress_json;
  if (atomic_exchange(&said_started, 1) == 0) (void)!write(started_fd, "s", 1);
}

static void child(const char *dir, const char *mark, int fd) {
  started_fd = fd;
  /* The server is the parent's: drop its sockets (the copies would hold connections open). */
  close(listen_fd);
  close(stop_pipe[0]);
  close(stop_pipe[1]);
  for (int i = 0; i < MAX_CONN; i++) {
    if (conns[i].fd >= 0) close(conns[i].fd);
  }
  setenv(MARK_ENV, mark, 1); /* inherited by the Chromium the task starts */
  int verbose = getenv("JEVGATE_CRASH_VERBOSE") != NULL;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (verbose) fprintf(stderr, "child: opening\n");
  if (jevgate_gateway_open(dir, CONFIG, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "child: open: %s\n", code_of(err));
    _exit(3);
  }
  char request[512];
  snprintf(request, sizeof request,
           "{\"userMessage\":\"1. click %s\\n2. click %s\\n3. click %s\\n4. click %s\\n5. click %s\","
           "\"startUrl\":\"http://127.0.0.1:%d/page\"}",
           BUTTONS[0], BUTTONS[1], BUTTONS[2], BUTTONS[3], BUTTONS[4], port);
  char *id = NULL, *status = NULL;
  if (jevgate_task_spawn(gw, OWNER, request, on_progress, NULL, &id, &err) != JEVGATE_OK) {
    fprintf(stderr, "child: spawn: %s\n", code_of(err));
    _exit(3);
  }
  if (verbose) fprintf(stderr, "child: spawned %s\n", id);
  if (jevgate_task_wait(gw, OWNER, id, 60000, &status, &err) != JEVGATE_OK) {
    fprintf(stderr, "child: wait: %s\n", code_of(err));
    _exit(3);
  }
  if (verbose) fprintf(stderr, "child: finished (%s)\n", strstr(status, "\"state\":\"completed\"") ? "completed" : "not completed");
  (void)!write(fd, "f", 1); /* finished before the kill: the parent is told */
  for (;;) pause();         /* the kill comes */
}

/* splitmix64: the seed is printed, so a failing run can be replayed. */
static uint64_t rng_state;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  double t0 = now_ms();
  const char *seed_text = argc > 2 ? argv[2] : getenv("JEVGATE_CRASH_SEED");
  uint64_t seed = seed_text ? strtoull(seed_text, NULL, 10) : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
  rng_state = seed;
  printf("task_crash: seed %llu (JEVGATE_CRASH_SEED=%llu replays), %d rounds\n", (unsigned long long)seed,
         (unsigned long long)seed, ROUNDS);
  if (mkdir(argv[1], 0700) != 0 && errno != EEXIST) {
    perror("mkdir");
    return 1;
  }
  /* The dead child's orphans (its Chromium) are adopted and reaped here. */
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  pthread_t server;
  if (start_server(&server) != 0) {
    perror("server");
    return 1;
  }
  int mid_run = 0, total_clicks = 0;
  for (int round = 1; round <= ROUNDS; round++) {
    char dir[4096], mark[64];
    snprintf(dir, sizeof dir, "%s/round-%d", argv[1], round);
    snprintf(mark, sizeof mark, "%ld-%d", (long)getpid(), round);
    long delay = (long)(rng_next() % (MAX_DELAY_MS + 1));
    /* Only the server thread runs beside this one: no jevgate thread crosses the fork. */
    CHECK(threads() == 2, "%d threads before fork (want main + server)", threads());
    int before[STEPS + 1];
    snapshot(before);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return 1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      close(fds[0]);
      child(dir, mark, fds[1]);
    }
    close(fds[1]);
    double spawned = now_ms();
    struct pollfd p = {fds[0], POLLIN, 0};
    char said = 0;
    int ready = poll(&p, 1, 30000) == 1 && read(fds[0], &said, 1) == 1;
    double started = now_ms();
    if (ready) sleep_ms(delay);
    kill(pid, SIGKILL);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    char late = 0;
    int finished = said == 'f' || read(fds[0], &late, 1) == 1; /* 'f': the task ended before the kill */
    close(fds[0]);
    CHECK(ready, "the child never started (exit status %d)", wstatus);
    CHECK(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL, "the child was not killed (status %d)", wstatus);
    /* No process of the dead child may be left: its Chromium dies with its pipe. */
    double gone_by = now_ms() + 10000;
    while (marked(mark) > 0 && now_ms() < gone_by) sleep_ms(20);
    CHECK(marked(mark) == 0, "processes of the dead child are left (%d)", marked(mark));
    sleep_ms(50); /* a beacon the browser sent before it died is counted by now */
    int after[STEPS + 1], clicked[STEPS + 1];
    snapshot(after);
    for (int i = 0; i <= STEPS; i++) clicked[i] = after[i] - before[i];
    printf("round %d: killed %ld ms after the start (child up %.0f ms before)%s\n", round, delay, started - spawned,
           finished ? ", after the task had ended" : "");
    mid_run += !finished;
    total_clicks += check_round(round, dir, clicked);
    if (failures) break;
  }
  (void)!write(stop_pipe[1], "x", 1);
  pthread_join(server, NULL);
  close(listen_fd);
  printf("task_crash: %d rounds, %d inside a run, %d real clicks, %d failure(s), %.1f s, seed %llu\n", ROUNDS,
         mid_run, total_clicks, failures, (now_ms() - t0) / 1000.0, (unsigned long long)seed);
  if (failures) return 1;
  printf("all C crash-safety expectations held\n");
  return 0;
}
