// The Jinja parser: segments and tokens -> syntax tree (jinja_ast.h).
#include <algorithm>
#include <string_view>

#include "base/error.h"
#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_lex.h"

namespace nbits::jinja::detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Parser.

class Parser {
 public:
  Parser(std::vector<Tok> toks, int line) : t_(std::move(toks)), line_(line) {}

  [[noreturn]] void bad(const std::string& what) { error_at(line_, what); }
  const Tok& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).kind == Tok::kOp && peek(k).text == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).kind == Tok::kName && peek(k).text == n; }
  bool eat_op(const char* op) {
    if (!is_op(op)) return false;
    ++p_;
    return true;
  }
  bool eat_name(const char* n) {
    if (!is_name(n)) return false;
    ++p_;
    return true;
  }
  void expect_op(const char* op) {
    if (!eat_op(op)) bad(std::string("expected '") + op + "'" + near());
  }
  std::string near() const {
    return peek().kind == Tok::kEnd ? " at end of tag" : " near '" + peek().text + "'";
  }
  std::string name() {
    if (peek().kind != Tok::kName) bad("expected a name" + near());
    return t_[p_++].text;
  }
  bool done() const { return peek().kind == Tok::kEnd; }
  void expect_end() {
    if (!done()) bad("unexpected '" + peek().text + "'");
  }

  ExprP make(Expr::Kind k) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line_;
    return e;
  }

  ExprP expression() {  // a if c else b
    ExprP e = or_expr();
    if (is_name("if")) {
      ++p_;
      ExprP c = make(Expr::kCond);
      ExprP cond = or_expr();
      ExprP other;
      if (eat_name("else")) other = expression();
      c->kids.push_back(std::move(cond));
      c->kids.push_back(std::move(e));
      if (other) c->kids.push_back(std::move(other));
      return c;
    }
    return e;
  }
  ExprP or_expr() {
    ExprP e = and_expr();
    while (eat_name("or")) e = bin(Expr::kOr, "or", std::move(e), and_expr());
    return e;
  }
  ExprP and_expr() {
    ExprP e = not_expr();
    while (eat_name("and")) e = bin(Expr::kAnd, "and", std::move(e), not_expr());
    return e;
  }
  ExprP not_expr() {
    if (eat_name("not")) {
      ExprP n = make(Expr::kNot);
      n->kids.push_back(not_expr());
      return n;
    }
    return compare();
  }
  ExprP bin(Expr::Kind k, const std::string& op, ExprP a, ExprP b) {
    ExprP e = make(k);
    e->name = op;
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    return e;
  }
  ExprP compare() {
    ExprP e = concat();
    for (;;) {
      static const char* ops[] = {"==", "!=", "<=", ">=", "<", ">"};
      bool matched = false;
      for (const char* op : ops)
        if (eat_op(op)) {
          e = bin(Expr::kBin, op, std::move(e), concat());
          matched = true;
          break;
        }
      if (matched) continue;
      if (eat_name("in")) {
        e = bin(Expr::kBin, "in", std::move(e), concat());
      } else if (is_name("not") && is_name("in", 1)) {
        p_ += 2;
        e = bin(Expr::kBin, "not in", std::move(e), concat());
      } else if (eat_name("is")) {
        ExprP t = make(Expr::kTest);
        t->negate = eat_name("not");
        t->name = peek().kind == Tok::kName ? name() : (peek().kind == Tok::kOp ? t_[p_++].text : name());
        t->kids.push_back(std::move(e));
        if (eat_op("(")) {
          call_args(*t);
        } else if (!done() && peek().kind != Tok::kOp && !is_name("and") && !is_name("or") &&
                   !is_name("else") && !is_name("if")) {
          t->kids.push_back(primary());  // "is divisibleby 3", "is sameas none"
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  ExprP concat() {
    ExprP e = additive();
    while (eat_op("~")) e = bin(Expr::kBin, "~", std::move(e), additive());
    return e;
  }
  ExprP additive() {
    ExprP e = multiplicative();
    for (;;) {
      if (eat_op("+"))
        e = bin(Expr::kBin, "+", std::move(e), multiplicative());
      else if (eat_op("-"))
        e = bin(Expr::kBin, "-", std::move(e), multiplicative());
      else
        return e;
    }
  }
  ExprP multiplicative() {
    ExprP e = power();
    for (;;) {
      const char* op = is_op("*") ? "*" : is_op("//") ? "//" : is_op("/") ? "/" : is_op("%") ? "%" : nullptr;
      if (!op) return e;
      ++p_;
      e = bin(Expr::kBin, op, std::move(e), power());
    }
  }
  ExprP power() {
    ExprP e = unary();
    while (eat_op("**")) e = bin(Expr::kBin, "**", std::move(e), unary());
    return e;
  }
  ExprP unary() {
    if (eat_op("-")) {
      ExprP n = make(Expr::kNeg);
      n->kids.push_back(unary());
      return n;
    }
    if (eat_op("+")) return unary();
    ExprP e = postfix(primary());
    while (eat_op("|")) {
      ExprP f = make(Expr::kFilter);
      f->name = name();
      f->kids.push_back(std::move(e));
      if (eat_op("(")) call_args(*f);
      e = postfix(std::move(f));
    }
    return e;
  }
  void call_args(Expr& e) {  // after '('
    if (eat_op(")")) return;
    do {
      if (peek().kind == Tok::kName && is_op("=", 1)) {
        e.kw.push_back(name());
        ++p_;
        e.kids.push_back(expression());
      } else {
        if (!e.kw.empty()) bad("positional argument after keyword argument");
        e.kids.push_back(expression());
      }
    } while (eat_op(","));
    expect_op(")");
  }
  ExprP postfix(ExprP e) {
    for (;;) {
      if (eat_op(".")) {
        ExprP a = make(Expr::kAttr);
        a->name = peek().kind == Tok::kInt ? t_[p_++].text : name();
        a->kids.push_back(std::move(e));
        e = std::move(a);
      } else if (eat_op("[")) {
        ExprP idx[3];
        bool slice = false;
        if (!is_op(":")) idx[0] = expression();
        if (eat_op(":")) {
          slice = true;
          if (!is_op(":") && !is_op("]")) idx[1] = expression();
          if (eat_op(":") && !is_op("]")) idx[2] = expression();
        }
        expect_op("]");
        ExprP s = make(slice ? Expr::kSlice : Expr::kIndex);
        s->kids.push_back(std::move(e));
        for (int k = 0; k < (slice ? 3 : 1); ++k) s->kids.push_back(idx[k] ? std::move(idx[k]) : nullptr);
        e = std::move(s);
      } else if (eat_op("(")) {
        ExprP c = make(Expr::kCall);
        c->kids.push_back(std::move(e));
        call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }
  ExprP primary() {
    const Tok& t = peek();
    ExprP e = make(Expr::kLit);
    switch (t.kind) {
      case Tok::kInt:
        e->lit = Value::integer(t.i);
        ++p_;
        return e;
      case Tok::kFloat:
        e->lit = Value::number(t.f);
        ++p_;
        return e;
      case Tok::kString: {
        std::string s;
        while (peek().kind == Tok::kString) s += t_[p_++].text;  // adjacent literals concatenate
        e->lit = Value::string(s);
        return e;
      }
      case Tok::kName: {
        std::string n = t_[p_++].text;
        if (n == "true" || n == "True")
          e->lit = Value::boolean(true);
        else if (n == "false" || n == "False")
          e->lit = Value::boolean(false);
        else if (n == "none" || n == "None")
          e->lit = Value::none();
        else {
          e->kind = Expr::kName;
          e->name = n;
        }
        return e;
      }
      case Tok::kOp:
        if (eat_op("(")) {
          ExprP inner = expression();
          if (is_op(",")) {  // tuple
            ExprP l = make(Expr::kList);
            l->kids.push_back(std::move(inner));
            while (eat_op(",") && !is_op(")")) l->kids.push_back(expression());
            inner = std::move(l);
          }
          expect_op(")");
          return inner;
        }
        if (eat_op("[")) {
          e->kind = Expr::kList;
          if (!eat_op("]")) {
            do {
              if (is_op("]")) break;
              e->kids.push_back(expression());
            } while (eat_op(","));
            expect_op("]");
          }
          return e;
        }
        if (eat_op("{")) {
          e->kind = Expr::kDict;
          if (!eat_op("}")) {
            do {
              if (is_op("}")) break;
              e->kids.push_back(expression());
              expect_op(":");
              e->kids.push_back(expression());
            } while (eat_op(","));
            expect_op("}");
          }
          return e;
        }
        break;
      case Tok::kEnd:
        bad("expression expected at end of tag");
    }
    bad("unexpected '" + t.text + "'");
  }

 private:
  std::vector<Tok> t_;
  size_t p_ = 0;
  int line_;
};

// Statement parser over segments.
class StmtParser {
 public:
  explicit StmtParser(std::vector<Segment> segs) : s_(std::move(segs)) {}

  // Parses nodes until a block tag whose first word is in stops; returns that word ("" at end).
  std::string body(std::vector<Node>& out, std::initializer_list<const char*> stops, Parser** stop_parser) {
    while (i_ < s_.size()) {
      const Segment& seg = s_[i_++];
      if (seg.kind == Segment::kText) {
        Node n;
        n.kind = Node::kText;
        n.text = seg.text;
        out.push_back(std::move(n));
        continue;
      }
      auto parser = std::make_unique<Parser>(tokenize(seg.text, seg.line), seg.line);
      Parser& p = *parser;
      if (seg.kind == Segment::kVar) {
        Node n;
        n.kind = Node::kOut;
        n.expr = p.expression();
        p.expect_end();
        out.push_back(std::move(n));
        continue;
      }
      std::string kw = p.name();
      for (const char* s : stops)
        if (kw == s) {
          current_ = std::move(parser);
          *stop_parser = current_.get();
          return kw;
        }
      Node n;
      n.kind = Node::kText;
      n.line = seg.line;
      if (kw == "if") {
        n.kind = Node::kIf;
        ExprP cond = p.expression();
        p.expect_end();
        for (;;) {
          std::vector<Node> branch;
          Parser* sp = nullptr;
          std::string stop = body(branch, {"elif", "else", "endif"}, &sp);
          if (stop.empty()) error_at(seg.line, "missing {% endif %}");
          n.branches.emplace_back(std::move(cond), std::move(branch));
          if (stop == "endif") {
            sp->expect_end();
            break;
          }
          if (stop == "else") {
            sp->expect_end();
            std::vector<Node> last;
            Parser* sp2 = nullptr;
            if (body(last, {"endif"}, &sp2).empty()) error_at(seg.line, "missing {% endif %}");
            sp2->expect_end();
            n.branches.emplace_back(nullptr, std::move(last));
            break;
          }
          cond = sp->expression();
          sp->expect_end();
        }
      } else if (kw == "for") {
        n.kind = Node::kFor;
        n.vars.push_back(p.name());
        while (p.eat_op(",")) n.vars.push_back(p.name());
        if (!p.eat_name("in")) p.bad("expected 'in' in for loop");
        n.expr = p.or_expr();
        if (p.eat_name("if")) n.filter = p.expression();
        if (p.eat_name("recursive")) p.bad("unsupported: recursive for loop");
        p.expect_end();
        Parser* sp = nullptr;
        std::string stop = body(n.body, {"else", "endfor"}, &sp);
        if (stop.empty()) error_at(seg.line, "missing {% endfor %}");
        sp->expect_end();
        if (stop == "else") {
          if (body(n.else_body, {"endfor"}, &sp).empty()) error_at(seg.line, "missing {% endfor %}");
          sp->expect_end();
        }
      } else if (kw == "set") {
        n.kind = Node::kSet;
        std::string first = p.name();
        if (p.eat_op(".")) {
          n.set_attr = true;
          n.vars = {first, p.name()};
        } else {
          n.vars.push_back(first);
          while (p.eat_op(",")) n.vars.push_back(p.name());
        }
        if (p.eat_op("=")) {
          n.expr = p.expression();
          p.expect_end();
        } else {  // {% set x %}...{% endset %}: the rendered body
          if (n.set_attr || n.vars.size() != 1) p.bad("a block {% set %} assigns one name");
          p.expect_end();
          Parser* sp = nullptr;
          if (body(n.body, {"endset"}, &sp).empty()) error_at(seg.line, "missing {% endset %}");
          sp->expect_end();
        }
      } else if (kw == "macro") {
        n.kind = Node::kMacro;
        n.text = p.name();
        if (!p.eat_op("(")) p.bad("expected '(' after the macro name");
        while (!p.eat_op(")")) {
          if (!n.vars.empty() && !p.eat_op(",")) p.bad("expected ',' or ')' in the macro's parameters");
          n.vars.push_back(p.name());
          n.defaults.push_back(p.eat_op("=") ? p.expression() : nullptr);
        }
        p.expect_end();
        Parser* sp = nullptr;
        if (body(n.body, {"endmacro"}, &sp).empty()) error_at(seg.line, "missing {% endmacro %}");
        sp->expect_end();
      } else if (kw == "filter") {
        n.kind = Node::kFilterBlock;
        n.text = p.name();
        if (p.eat_op("(")) {
          while (!p.eat_op(")")) {
            if (!n.defaults.empty() && !p.eat_op(",")) p.bad("expected ',' or ')' in the filter's arguments");
            n.defaults.push_back(p.expression());
          }
        }
        p.expect_end();
        Parser* sp = nullptr;
        if (body(n.body, {"endfilter"}, &sp).empty()) error_at(seg.line, "missing {% endfilter %}");
        sp->expect_end();
      } else if (kw == "generation") {  // transformers' assistant-mask marker: renders its body
        n.kind = Node::kBlock;
        p.expect_end();
        Parser* sp = nullptr;
        if (body(n.body, {"endgeneration"}, &sp).empty()) error_at(seg.line, "missing {% endgeneration %}");
        sp->expect_end();
      } else if (kw == "break" || kw == "continue") {
        n.kind = kw == "break" ? Node::kBreak : Node::kContinue;
        p.expect_end();
      } else {
        error_at(seg.line, "unsupported Jinja statement '" + kw + "'");
      }
      out.push_back(std::move(n));
    }
    return "";
  }

  std::vector<Node> parse_all() {
    std::vector<Node> nodes;
    Parser* sp = nullptr;
    std::string stop = body(
        nodes, {"endif", "endfor", "elif", "else", "endset", "endmacro", "endfilter", "endgeneration"}, &sp);
    if (!stop.empty()) error_at(s_[i_ - 1].line, "unexpected {% " + stop + " %}");
    return nodes;
  }

 private:
  std::vector<Segment> s_;
  size_t i_ = 0;
  std::unique_ptr<Parser> current_;
};

}  // namespace

std::vector<Node> parse(std::string_view source) { return StmtParser(lex(source)).parse_all(); }

}  // namespace nbits::jinja::detail
