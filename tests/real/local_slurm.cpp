#include "tests/real/local_slurm.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace replisim::test {

namespace {

// The program `name` in PATH or in the system directories a root shell has (slurmctld, slurmd
// and munged live in /usr/sbin, which a test's PATH may lack); empty when nowhere.
std::string find_program(const std::string& name) {
  std::vector<std::string> dirs;
  const char* path = std::getenv("PATH");
  std::istringstream in(path != nullptr ? path : "");
  for (std::string d; std::getline(in, d, ':');) {
    if (!d.empty()) dirs.push_back(d);
  }
  for (const char* d : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) dirs.push_back(d);
  for (const std::string& d : dirs) {
    const std::string candidate = d + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

Daemon::Daemon(const std::vector<std::string>& argv_in, const std::string& log,
               const std::vector<std::string>& environment) {
  std::vector<std::string> storage = argv_in;
  std::vector<std::string> entries = environment;  // putenv keeps the pointers
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    // Its own process group: a terminal's Ctrl-C reaches the test, which stops it in order.
    ::setpgid(0, 0);
    // A test killed before its destructors run (a ctest timeout, SIGPIPE) takes its daemons along.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    for (std::string& e : entries) ::putenv(e.data());
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
}

bool Daemon::running(std::string* status) {
  if (pid_ > 0) {
    int s = 0;
    if (::waitpid(pid_, &s, WNOHANG) == pid_) {
      exited_ = describe_wait_status(s);
      pid_ = -1;
    }
  }
  if (status != nullptr) *status = exited_;
  return pid_ > 0;
}

void Daemon::stop(double stop_wait_s) {
  if (!running()) return;
  ::kill(pid_, SIGTERM);
  for (double waited = 0; waited < stop_wait_s && running(); waited += 0.05) sleep_s(0.05);
  if (running()) {
    ::kill(pid_, SIGKILL);
    int s = 0;
    ::waitpid(pid_, &s, 0);
    exited_ = describe_wait_status(s);
    pid_ = -1;
  }
}

Daemon::~Daemon() {
  stop();
}

LocalSlurm::LocalSlurm() {
  const std::vector<std::string> programs = {"munged", "slurmctld", "slurmd",  "sbatch", "srun",
                                             "squeue", "sinfo",     "scancel", "salloc"};
  std::vector<std::string> paths;
  for (const std::string& p : programs) {
    paths.push_back(find_program(p));
    if (paths.back().empty()) {
      why_not_ = p + " is not installed (scripts/setup installs Debian's slurm-wlm and munge)";
      return;
    }
  }
  if (::geteuid() != 0) {
    why_not_ =
        "slurmd starts job steps as their user and must run as root; this test runs as uid " +
        std::to_string(::geteuid());
    return;
  }
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/replisim-slurm-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  // munged refuses a socket directory that others cannot search.
  ::chmod(dir_.c_str(), 0755);
  for (const char* sub : {"/state", "/spool"}) ::mkdir((dir_ + sub).c_str(), 0755);

  // A munge key of our own (munged's own key, if any, stays untouched): 1,024 random bytes, 0600.
  const std::string key = dir_ + "/munge.key";
  {
    std::random_device random;
    std::string bytes(1024, '\0');
    for (char& c : bytes) c = char(random() & 0xff);
    std::ofstream out(key, std::ios::binary);
    out << bytes;
  }
  ::chmod(key.c_str(), 0600);
  const std::string socket = dir_ + "/munge.socket";
  daemon_logs_ = {dir_ + "/munged.log", dir_ + "/slurmctld.log", dir_ + "/slurmd.log"};
  daemons_.push_back(std::make_unique<Daemon>(
      std::vector<std::string>{paths[0], "--foreground", "--force", "--key-file=" + key,
                               "--socket=" + socket, "--pid-file=" + dir_ + "/munged.pid",
                               "--seed-file=" + dir_ + "/munged.seed"},
      daemon_logs_[0]));
  // munged makes its socket within a second; slurmctld gives up at once without it.
  for (double waited = 0; waited < 10 && !std::filesystem::exists(socket) && daemons_[0]->running();
       waited += 0.05) {
    sleep_s(0.05);
  }
  std::string status;
  if (!daemons_[0]->running(&status) || !std::filesystem::exists(socket)) {
    why_not_ = "munged did not start (" + (status.empty() ? "no socket in 10 s" : status) +
               "): " + tail_of(daemon_logs_[0]);
    return;
  }

  int controller_port = free_port(), node_port = free_port();
  for (int tries = 0; node_port == controller_port && tries < 10; ++tries) node_port = free_port();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  const long memory_mib = std::max(1L, long(double(::sysconf(_SC_PHYS_PAGES)) *
                                            double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0)));
  conf_ = dir_ + "/slurm.conf";
  {
    // Slurm 22.05's slurm.conf(5). No cgroups (a container has no systemd to delegate them):
    // processes tracked through /proc, no task binding, no accounting. SlurmdParameters
    // config_overrides: the node is what this file says even where slurmd counts sockets and
    // cores otherwise (a VM's CPUs).
    std::ofstream out(conf_);
    out << "ClusterName=replisimtest\n"
        << "SlurmctldHost=localhost(127.0.0.1)\n"
        << "SlurmctldPort=" << controller_port << "\n"
        << "SlurmdPort=" << node_port << "\n"
        << "SlurmUser=root\nSlurmdUser=root\n"
        << "AuthType=auth/munge\nCredType=cred/munge\n"
        << "AuthInfo=socket=" << socket << "\n"
        << "StateSaveLocation=" << dir_ << "/state\n"
        << "SlurmdSpoolDir=" << dir_ << "/spool\n"
        << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
        << "SlurmdPidFile=" << dir_ << "/slurmd.pid\n"
        << "SlurmctldLogFile=" << dir_ << "/slurmctld.file.log\n"
        << "SlurmdLogFile=" << dir_ << "/slurmd.file.log\n"
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
        << "JobAcctGatherType=jobacct_gather/none\n"
        << "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n"
        << "MpiDefault=none\nMailProg=/bin/true\n"
        << "SchedulerType=sched/backfill\n"
        << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
        << "ReturnToService=2\nSlurmdParameters=config_overrides\n"
        << "MinJobAge=300\nKillWait=5\n"
        << "NodeName=" << kNode << " NodeHostname=" << host << " NodeAddr=127.0.0.1 CPUs=" << cpus
        << " RealMemory=" << memory_mib << " State=UNKNOWN\n"
        << "PartitionName=test Nodes=" << kNode << " Default=YES MaxTime=INFINITE State=UP\n";
  }
  const std::vector<std::string> env = environment();
  // -D: in the foreground (the process we started is the daemon); -i: no state to recover.
  daemons_.push_back(std::make_unique<Daemon>(
      std::vector<std::string>{paths[1], "-D", "-i", "-f", conf_}, daemon_logs_[1], env));
  daemons_.push_back(std::make_unique<Daemon>(
      std::vector<std::string>{paths[2], "-D", "-N", kNode, "-f", conf_}, daemon_logs_[2], env));

  // The node registers with the controller and turns idle within seconds.
  std::string state;
  for (double waited = 0; waited < 30; waited += 0.2) {
    for (size_t d = 0; d < daemons_.size(); ++d) {
      if (!daemons_[d]->running(&status)) {
        why_not_ = programs[d] + " exited (" + status + "): " + tail_of(daemon_logs_[d]);
        return;
      }
    }
    const BinaryResult r = command({"sinfo", "--noheader", "--nodes", kNode, "--format", "%T"}, 10);
    state = r.exit_code == 0 ? r.out.substr(0, r.out.find('\n')) : r.err;
    if (state == "idle") return;
    sleep_s(0.2);
  }
  why_not_ = "the node was not idle within 30 s (sinfo: " + state.substr(0, 200) +
             "); slurmctld: " + tail_of(daemon_logs_[1]) + "; slurmd: " + tail_of(daemon_logs_[2]);
}

LocalSlurm::~LocalSlurm() {
  if (!conf_.empty() && daemons_.size() == 3 && daemons_[1]->running()) {
    // Jobs left (a test that failed midway): cancelled, their steps ended by slurmd.
    command({"scancel", "--full", "--user", "root"}, 10);
    for (double waited = 0; waited < 10; waited += 0.2) {
      const BinaryResult r = command({"squeue", "--noheader", "--format", "%i"}, 10);
      if (r.exit_code != 0 || r.out.empty()) break;
      sleep_s(0.2);
    }
  }
  while (!daemons_.empty()) daemons_.pop_back();  // slurmd, slurmctld, munged
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::vector<std::string> LocalSlurm::environment() const {
  return {"SLURM_CONF=" + conf_};
}

BinaryResult LocalSlurm::command(const std::vector<std::string>& argv, int timeout_s,
                                 const std::vector<std::string>& extra_environment) const {
  std::vector<std::string> env = environment();
  env.insert(env.end(), extra_environment.begin(), extra_environment.end());
  std::vector<std::string> full = argv;
  full[0] = find_program(argv[0]);
  if (full[0].empty()) return {127, "", argv[0] + " is not installed"};
  return run_program(full, timeout_s, env);
}

std::string LocalSlurm::version() const {
  const BinaryResult r = command({"sinfo", "--version"}, 10);
  return r.out.substr(0, r.out.find('\n'));
}

std::vector<std::string> LocalSlurm::wait_for_job(const std::string& job_id,
                                                  double timeout_s) const {
  for (double waited = 0; waited < timeout_s; waited += 0.2) {
    // Every task of an array on its own line (--array), in every state (jobs that ended stay for
    // MinJobAge, 300 s).
    const BinaryResult r = command(
        {"squeue", "--noheader", "--array", "--states", "all", "--jobs", job_id, "--format", "%T"},
        10);
    std::vector<std::string> states;
    bool ended = r.exit_code == 0;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      states.push_back(line);
      for (const char* live : {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED",
                               "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT"}) {
        ended = ended && line != live;
      }
    }
    if (ended && !states.empty()) return states;
    sleep_s(0.2);
  }
  return {};
}

std::string LocalSlurm::tail_of(const std::string& log) const {
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string out;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i) {
    out += (out.empty() ? "" : " | ") + lines[i];
  }
  return out.empty() ? "(its log is empty)" : out;
}

}  // namespace replisim::test
