package test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gslbdns/gslb/edgeagent"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// proc is a child process with its output kept.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testsupport.LogBuffer
	done chan struct{}
}

func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(args[0], args[1:]...), out: &testsupport.LogBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, p.out.String())
		}
	})
	return p
}

func (p *proc) stop() { stopProcess(p.cmd, p.done) }

// nginxPath is Debian's nginx, in /usr/sbin, which a user's PATH may lack.
func nginxPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
		t.Fatalf("nginx is required (make deps installs it): %v", err)
	}
	return "/usr/sbin/nginx"
}

// startNginx runs nginx in dir with the gslb_json log in log, real client
// addresses from X-Forwarded-For, and location / doing what location says;
// it returns its address and configuration file.
func startNginx(t *testing.T, bin, dir, log, location string, workers int) (addr, conf string) {
	t.Helper()
	addr = testsupport.FreeAddr(t)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	for _, d := range []string{"tmp", "logs"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	conf = writeFile(t, dir, "nginx.conf", fmt.Sprintf(`%[1]s
worker_processes %[6]d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 256; }
http {
    client_body_temp_path %[2]s/tmp/body;
    proxy_temp_path %[2]s/tmp/proxy;
    fastcgi_temp_path %[2]s/tmp/fastcgi;
    uwsgi_temp_path %[2]s/tmp/uwsgi;
    scgi_temp_path %[2]s/tmp/scgi;
    %[3]s
    access_log %[4]s gslb_json;
    set_real_ip_from 127.0.0.0/8;
    real_ip_header X-Forwarded-For;
    server {
        listen %[5]s;
        location / { %[7]s }
    }
}
`, user, dir, edgeagent.LogFormatJSON, log, addr, workers, location))
	startProc(t, "nginx", bin, "-c", conf, "-p", dir, "-g", "daemon off;")
	return addr, conf
}

// The data loop end to end through real processes: nginx (real client
// addresses from X-Forwarded-For) in front of an upstream slower for
// Zhejiang's network, a gslb feed agent tailing its JSON log, and two
// CoreDNS of a fleet on a real redis-server, the agent posting to one. The log is rotated mid-run (mv and nginx -s
// reopen), CoreDNS is stopped (SIGSTOP) for 20 s while requests go on and
// the agent restarts: the requests the feed counts equal those sent, on
// both members, the other having them only through the fleet's stream.
func TestEdgeAgentCountsEveryRequest(t *testing.T) {
	nginxBin := nginxPath(t)
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
		{Network: "2.0.0.0/8", Country: "CN", Province: "BJ", Lat: 39.9, Lon: 116.4, Radius: 50},
	}, []mmdbgen.ASN{{Network: "1.0.0.0/8", ASN: 4134, Org: "Chinanet"}, {Network: "2.0.0.0/8", ASN: 4134, Org: "Chinanet"}})
	nodes := writeFile(t, dir, "nodes.yaml", feedNodes)
	token := func(name, tok string) string {
		p := writeFile(t, dir, name, tok+"\n")
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	adminToken, edgeToken := "s3cret-token-for-tests", "hz-edge-token-5f1c9a7e3b2d4068"
	adminTokenFile, edgeTokenFile := token("admin.token", adminToken), token("edge.token", edgeToken)

	// The upstream: 30 ms for Zhejiang's clients, 2 ms for the others.
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(upstream, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("X-Forwarded-For"), "1.") {
			time.Sleep(30 * time.Millisecond)
		} else {
			time.Sleep(2 * time.Millisecond)
		}
		w.Write([]byte("ok\n"))
	}))
	t.Cleanup(func() { upstream.Close() })

	log := filepath.Join(dir, "access.log")
	web, conf := startNginx(t, nginxBin, dir, log, "proxy_pass http://"+upstream.Addr().String()+";", 2)

	// Two members of a fleet: the agent posts to a, and b has the rows
	// only through the fleet's stream on a real redis-server.
	rdb := testredis.Start(t)
	corefileText := func(member, admin string) string {
		return fmt.Sprintf(`example.org:%s {
    bind 127.0.0.1
    gslb {
        geoip %s
        asn %s
        nodes %s
        admin %s {
            token_file %s
        }
        redis %s {
            timeout 250ms
        }
        fleet edges {
            member %s
            vantage telecom ZJ
        }
        feed {
            cycle 200ms
            half_life 0s
            min_samples 1
            source hz-edge {
                token_file %s
                nodes hz-*
            }
        }
    }
}
`, strings.Split(testsupport.FreeAddr(t), ":")[1], city, asn, nodes, admin, adminTokenFile, rdb.Addr(), member, edgeTokenFile)
	}
	admin, adminB := testsupport.FreeAddr(t), testsupport.FreeAddr(t)
	coredns := startProc(t, "coredns", corednsTool(t), "-conf", writeFile(t, dir, "Corefile", corefileText("a", admin)))
	startProc(t, "coredns b", corednsTool(t), "-conf", writeFile(t, dir, "Corefile.b", corefileText("b", adminB)))
	cellsOf := func(admin string) (total float64, byPlace map[string]float64, p50 map[string]float64, err error) {
		req, _ := http.NewRequest("GET", "http://"+admin+"/v1/feed", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		var v struct {
			Cells []struct {
				Province, ISP, Node string
				Samples             float64
				P50                 float64 `json:"ttfb_p50_ms"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return 0, nil, nil, err
		}
		byPlace, p50 = map[string]float64{}, map[string]float64{}
		for _, c := range v.Cells {
			total += c.Samples
			byPlace[c.Province+" "+c.ISP] += c.Samples
			p50[c.Province+" "+c.ISP] = c.P50
		}
		return total, byPlace, p50, nil
	}
	cells := func() (float64, map[string]float64, map[string]float64, error) { return cellsOf(admin) }
	for _, a := range []string{admin, adminB} {
		testsupport.WaitFor(t, "CoreDNS's feed", func() (bool, string) {
			_, _, _, err := cellsOf(a)
			return err == nil, fmt.Sprint(err)
		})
	}
	testsupport.WaitFor(t, "nginx", func() (bool, string) {
		resp, err := http.Get("http://" + web + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil, fmt.Sprint(err)
	})
	// That request was logged before the agent started: it is not counted.

	agentArgs := []string{gslbTool(t), "feed", "-log", log, "-url", "http://" + admin + "/v1/feed", "-token-file", edgeTokenFile,
		"-node", "hz-1", "-interval", "300ms", "-timeout", "2s", "-max-backoff", "2s"}
	agent := startProc(t, "gslb feed", agentArgs...)
	time.Sleep(500 * time.Millisecond) // the agent opens the log at its end

	var sent, zj, bj atomic.Int64
	client := &http.Client{Timeout: 10 * time.Second}
	send := func(n int) {
		t.Helper()
		for i := range n {
			addr := fmt.Sprintf("1.0.%d.%d", i%40, 1+i%200)
			if i%3 == 0 {
				addr = fmt.Sprintf("2.0.%d.9", i%20)
			}
			req, _ := http.NewRequest("GET", "http://"+web+"/", nil)
			req.Header.Set("X-Forwarded-For", addr)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("Request %d: %v", i, err)
			}
			resp.Body.Close()
			sent.Add(1)
			if i%3 == 0 {
				bj.Add(1)
			} else {
				zj.Add(1)
			}
		}
	}
	send(150)
	// Rotate: mv, then nginx -s reopen; requests between the two go to
	// the renamed file.
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	send(30)
	if out, err := exec.Command(nginxBin, "-c", conf, "-p", dir, "-s", "reopen").CombinedOutput(); err != nil {
		t.Fatalf("nginx -s reopen: %v\n%s", err, out)
	}
	send(120)
	// gslb stops for 20 s; requests go on, and the agent restarts.
	coredns.cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	send(100)
	agent.stop()
	send(50)
	agent = startProc(t, "gslb feed (restarted)", agentArgs...)
	send(100)
	time.Sleep(time.Until(stopped.Add(20 * time.Second)))
	coredns.cmd.Process.Signal(syscall.SIGCONT)
	send(150)

	want := float64(sent.Load())
	var last string
	testsupport.WaitFor(t, "the feed to count every request", func() (bool, string) {
		total, byPlace, _, err := cells()
		last = fmt.Sprintf("counted %v of %v (%v), %v", total, want, byPlace, err)
		return err == nil && total >= want, last
	})
	time.Sleep(2 * time.Second) // a double count would show by now
	total, byPlace, p50, err := cells()
	if err != nil || total != want || byPlace["ZJ telecom"] != float64(zj.Load()) || byPlace["BJ telecom"] != float64(bj.Load()) {
		t.Fatalf("The feed counts %v requests (%v), want exactly the %v sent (ZJ %d, BJ %d): %v", total, byPlace, want, zj.Load(), bj.Load(), err)
	}
	testsupport.WaitFor(t, "b to count every request through the stream", func() (bool, string) {
		total, byPlace, _, err := cellsOf(adminB)
		last = fmt.Sprintf("counted %v of %v (%v), %v", total, want, byPlace, err)
		return err == nil && total >= want, last
	})
	time.Sleep(time.Second) // a double count would show by now
	if totalB, byPlaceB, _, err := cellsOf(adminB); err != nil || totalB != want || byPlaceB["ZJ telecom"] != float64(zj.Load()) || byPlaceB["BJ telecom"] != float64(bj.Load()) {
		t.Errorf("Through the stream b counts %v requests (%v), want exactly the %v sent: %v", totalB, byPlaceB, want, err)
	}
	if p50["ZJ telecom"] < 25 || p50["BJ telecom"] > 25 {
		t.Errorf("TTFB p50: %v, want ZJ's above 25 ms (its upstream takes 30) and BJ's below", p50)
	}
	// The restarted agent met the stopped gslb: it spooled, backed off
	// and delivered after.
	if out := agent.out.String(); !strings.Contains(out, "gslb feed: delivery failed, retry in") || !strings.Contains(out, "lines (0 unparsed)") {
		t.Errorf("The agent's lines show no failed delivery or no summary:\n%s", out)
	}
	t.Logf("Sent %v requests (ZJ %d, BJ %d), the feed counts %v on both members; TTFB p50 %v", want, zj.Load(), bj.Load(), total, p50)
}
