package evalset

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Synthetic is a deterministic generator of realistic-looking QA text for
// latency benchmarks: English technical prose with identifiers, paths and
// error codes, and about one record in ten in Chinese. Word choice follows a
// Zipf distribution over a vocabulary of real words followed by generated
// rare ones, so posting lists have the skew of real corpora.
type Synthetic struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	zh    *rand.Zipf
	vocab []string
}

// NewSynthetic returns a generator; the same seed yields the same text.
func NewSynthetic(seed uint64) *Synthetic {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vocab := make([]string, 0, 40000)
	vocab = append(vocab, strings.Fields(synthStop)...)
	vocab = append(vocab, strings.Fields(synthTech)...)
	// Generated rare words from syllables, deterministic in the seed.
	syl := strings.Fields(synthSyllables)
	seen := map[string]bool{}
	for _, w := range vocab {
		seen[w] = true
	}
	for len(vocab) < cap(vocab) {
		n := 2 + r.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	zhWords := len([]rune(synthZhChars)) * 8
	return &Synthetic{
		r:     r,
		zipf:  rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1)),
		zh:    rand.NewZipf(r, 1.1, 2, uint64(zhWords-1)),
		vocab: vocab,
	}
}

// Record returns the i-th synthetic QA (ids are "syn-<i>").
func (s *Synthetic) Record(i int) Record {
	if s.r.IntN(10) == 0 {
		return Record{ID: fmt.Sprintf("syn-%d", i), Question: s.zhText(8 + s.r.IntN(12)), Answer: s.zhText(30 + s.r.IntN(60)), Lang: "zh"}
	}
	return Record{ID: fmt.Sprintf("syn-%d", i), Question: s.enText(6+s.r.IntN(10), true), Answer: s.enText(20+s.r.IntN(40), false), Lang: "en"}
}

// Query returns a question-like query of roughly 200 characters (Chinese
// about one time in ten, then shorter in characters).
func (s *Synthetic) Query() string {
	if s.r.IntN(10) == 0 {
		return s.zhText(25 + s.r.IntN(15))
	}
	var b strings.Builder
	for b.Len() < 190 {
		b.WriteString(s.enText(8, true))
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

func (s *Synthetic) word() string { return s.vocab[s.zipf.Uint64()] }

func (s *Synthetic) enText(words int, question bool) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch x := s.r.IntN(100); {
		case x < 3: // snake_case identifier
			b.WriteString(s.word() + "_" + s.word())
		case x < 6: // camelCase identifier
			w2 := s.word()
			b.WriteString(s.word() + strings.ToUpper(w2[:1]) + w2[1:])
		case x < 8: // path
			fmt.Fprintf(&b, "src/%s/%s.go", s.word(), s.word())
		case x < 9: // error code or number
			fmt.Fprintf(&b, "E%04d", s.r.IntN(2000))
		case x < 10:
			fmt.Fprintf(&b, "%d", s.r.IntN(1000))
		default:
			b.WriteString(s.word())
		}
	}
	if question {
		b.WriteByte('?')
	} else {
		b.WriteByte('.')
	}
	return b.String()
}

func (s *Synthetic) zhText(words int) string {
	chars := []rune(synthZhChars)
	var b strings.Builder
	for range words {
		// A "word" is one or two characters chosen by Zipf rank.
		k := s.zh.Uint64()
		b.WriteRune(chars[k%uint64(len(chars))])
		if k >= uint64(len(chars)) {
			b.WriteRune(chars[(k/uint64(len(chars))*7+k)%uint64(len(chars))])
		}
	}
	b.WriteRune('？')
	return b.String()
}

const synthStop = `the to a is of and in it i for on that this with my how not be can when from but
do have error as if or are an use file using what at by get does will after no way why`

const synthTech = `ubuntu install server command line package version update system run working
windows linux user data code function value string list python java script build test config
directory folder path network driver kernel boot disk drive partition memory process thread
database query table index key client request response http api json xml url port connection
proxy docker container image git branch commit merge repository remote push pull clone
compile compiler link library module import export class method object type interface struct
variable array map slice pointer null nil exception stack trace log debug release deploy
service daemon cron job schedule permission denied root sudo password login ssh key certificate
timeout retry cache session cookie token auth oauth header body status code redirect
install apt yum pip npm node react vue angular css html browser chrome firefox window screen
display monitor resolution graphics nvidia amd intel cpu gpu usb wifi bluetooth sound audio
keyboard mouse terminal shell bash zsh vim emacs editor ide plugin extension setting option
flag argument parameter return loop condition branch switch case default error warning fatal
panic crash freeze hang slow fast performance latency throughput benchmark profile trace
upgrade downgrade dependency conflict broken missing found exist create delete remove rename
copy move read write open close lock unlock mount unmount format backup restore sync async
event handler callback promise future channel goroutine mutex race deadlock signal kill
environment variable export source profile bashrc locale encoding utf unicode character
`

const synthSyllables = `ka ri to mu ne so la vi de po ru xi ban tor mel qua zen fi go lo ser tin vak dor
pel mi ra ko su te na hu bri gan lum sto ver pix dal mon rex tal kin jo ze ly`

const synthZhChars = `内存泄漏服务器配置文件安装失败错误代码数据库连接超时请求响应接口调用函数变量类型编译运行测试部署环境
网络端口权限用户密码登录缓存索引查询性能优化线程进程死锁异常日志调试版本更新依赖冲突路径目录系统内核驱动磁盘分区启动
重启关闭打开读取写入删除修改创建复制移动同步异步事件回调消息队列容器镜像仓库分支提交合并远程推送拉取克隆构建发布`
