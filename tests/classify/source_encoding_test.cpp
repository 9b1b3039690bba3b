#include "tpulaunch/classify/source_encoding.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tpulaunch {
namespace {

std::string error_of(std::string_view source) {
  const Status status = check_python_source(source, "a.py", "script");
  return status.ok() ? std::string("ok") : status.error().message;
}

TEST(SourceEncoding, EveryNamePythonGivesTheCodecsItReads) {
  // Spellings Python accepts (checked with codecs.lookup and the tokenizer's shortcut).
  for (std::string_view name : {"utf-8", "UTF-8", "utf8", "utf_8", "u8", "cp65001", "utf-8-unix", "UTF_8-dos"}) {
    EXPECT_EQ(source_codec(name), SourceCodec::utf8) << name;
  }
  for (std::string_view name : {"latin-1", "Latin-1", "latin1", "iso-8859-1", "ISO_8859-1", "iso8859-1", "l1",
                                "latin", "cp819", "iso-latin-1", "iso-latin-1-unix", "iso-ir-100", "8859"}) {
    EXPECT_EQ(source_codec(name), SourceCodec::latin1) << name;
  }
  for (std::string_view name : {"cp1252", "CP1252", "windows-1252", "Windows_1252", "1252"}) {
    EXPECT_EQ(source_codec(name), SourceCodec::cp1252) << name;
  }
  for (std::string_view name : {"ascii", "us-ascii", "US_ASCII", "646", "ansi_x3.4_1968"}) {
    EXPECT_EQ(source_codec(name), SourceCodec::ascii) << name;
  }
  for (std::string_view name : {"shift_jis", "utf-16", "latin-2", "iso-8859-15", "bogus", "", "utf-88", "cp125"}) {
    EXPECT_FALSE(source_codec(name).has_value()) << name;
  }
}

TEST(SourceEncoding, DeclarationFormsOnLineOneOrTwo) {
  const struct {
    std::string_view source;
    std::string_view name;
    std::uint32_t line;
  } cases[] = {
      {"# -*- coding: latin-1 -*-\nx = 1\n", "latin-1", 1},
      {"#!/usr/bin/env python3\n# -*- coding: latin-1 -*-\n", "latin-1", 2},
      {"# vim: set fileencoding=cp1252 :\n", "cp1252", 1},
      {"#!/usr/bin/python\n# vim:fileencoding=iso-8859-1\n", "iso-8859-1", 2},
      {"  # coding=utf-8\n", "utf-8", 1},
      {"\n# coding: latin-1\n", "latin-1", 2},       // a blank line 1
      {"\xEF\xBB\xBF# coding: utf-8\n", "utf-8", 1}, // after a byte order mark
      {"# coding: latin-1\r\nx = 1\r\n", "latin-1", 1},
      {"# coding:\n# coding: cp1252\n", "cp1252", 2}, // no name on line 1: line 2 is read
      {"# this coding: is about coding=latin-1\n", "is", 1}, // the first match, as Python's regex finds it
  };
  for (const auto& c : cases) {
    const auto declaration = find_coding_declaration(c.source);
    ASSERT_TRUE(declaration.has_value()) << c.source;
    EXPECT_EQ(declaration->name, c.name) << c.source;
    EXPECT_EQ(declaration->line, c.line) << c.source;
  }
}

TEST(SourceEncoding, NotADeclaration) {
  for (std::string_view source : {
           "x = 1\n# -*- coding: latin-1 -*-\n",        // line 2 after code on line 1
           "x = 1  # coding: latin-1\n",                // not a comment line
           "#!/usr/bin/env python3\n\n# coding: latin-1\n", // line 3
           "s = '# coding: latin-1'\n",
           "# encoding latin-1\n",
           "",
       }) {
    EXPECT_FALSE(find_coding_declaration(source).has_value()) << source;
  }
}

TEST(SourceEncoding, DeclaredLatin1AndCp1252AreValidAndDecoded) {
  const std::string latin1 = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n";
  EXPECT_EQ(error_of(latin1), "ok");
  EXPECT_EQ(decode_python_source(latin1), std::optional<std::string>("# -*- coding: latin-1 -*-\nname = 'caf\xc3\xa9'\n"));
  const std::string cp1252 = "# coding: cp1252\nprice = '\x80 5'\nq = '\x93x\x94'\n";
  EXPECT_EQ(error_of(cp1252), "ok");
  EXPECT_EQ(decode_python_source(cp1252),
            std::optional<std::string>("# coding: cp1252\nprice = '\xe2\x82\xac 5'\nq = '\xe2\x80\x9cx\xe2\x80\x9d'\n"));
  // cp1252's 0x80..0x9f differ from Latin-1's.
  EXPECT_EQ(decode_python_source("# coding: latin-1\n'\x80'\n"), std::optional<std::string>("# coding: latin-1\n'\xc2\x80'\n"));
}

TEST(SourceEncoding, Utf8AndUndeclaredSourceIsReadAsItIs) {
  EXPECT_FALSE(decode_python_source("x = 'caf\xc3\xa9'\n").has_value());
  EXPECT_FALSE(decode_python_source("# coding: utf-8\nx = 1\n").has_value());
  EXPECT_FALSE(decode_python_source("# coding: ascii\nx = 1\n").has_value());
  EXPECT_EQ(error_of("# coding: utf-8\nx = 'caf\xc3\xa9'\n"), "ok");
  EXPECT_EQ(error_of("# coding: ascii\nx = 1\n"), "ok");
}

TEST(SourceEncoding, UndeclaredNonUtf8KeepsItsError) {
  EXPECT_EQ(error_of("x = 1\nname = 'caf\xe9'\n"), "a.py:2:12: script is not UTF-8 text (byte 0xe9)");
  // A declaration Python does not honour (line 2 after code) is no declaration.
  EXPECT_EQ(error_of("x = 1\n# coding: latin-1\ny = '\xe9'\n"), "a.py:3:6: script is not UTF-8 text (byte 0xe9)");
  // Declared UTF-8 is held to UTF-8.
  EXPECT_EQ(error_of("# coding: utf-8\ny = '\xe9'\n"), "a.py:2:6: script is not UTF-8 text (byte 0xe9)");
}

TEST(SourceEncoding, ABytePossibleInNoDeclaredEncodingNamesIt) {
  EXPECT_EQ(error_of("# coding: cp1252\nx = '\x81'\n"),
            "a.py:2:6: script declares the encoding 'cp1252' (line 1), but byte 0x81 is not cp1252");
  EXPECT_EQ(error_of("#!/usr/bin/python\n# coding: ascii\nx = '\xe9'\n"),
            "a.py:3:6: script declares the encoding 'ascii' (line 2), but byte 0xe9 is not ASCII");
}

TEST(SourceEncoding, AnEncodingNotReadIsRefusedByName) {
  EXPECT_EQ(error_of("# -*- coding: shift_jis -*-\nx = '\x82\xa0'\n"),
            "a.py:1: script declares the encoding 'shift_jis' (PEP 263), which tpulaunch does not read; save it as "
            "UTF-8 (or declare utf-8, latin-1, cp1252 or ascii)");
  EXPECT_EQ(error_of("\xEF\xBB\xBF# coding: latin-1\nx = 1\n"),
            "a.py:1: script starts with a UTF-8 byte order mark but declares the encoding 'latin-1', which Python "
            "refuses; remove one of them");
}

TEST(SourceEncoding, NulByteIsReportedAsOne) {
  EXPECT_EQ(error_of(std::string("x = 1\nprint(1)\0\n", 16)),
            "a.py:2:9: script contains a NUL byte (byte offset 14), which Python source cannot hold");
  // Whatever the declared encoding.
  EXPECT_EQ(error_of(std::string("# coding: latin-1\nx = '\xe9'\0\n", 27)),
            "a.py:2:8: script contains a NUL byte (byte offset 25), which Python source cannot hold");
  // A file with a NUL byte is binary, whatever else it holds: the NUL byte is what is reported.
  EXPECT_EQ(error_of(std::string("\xff\0", 2)),
            "a.py:1:2: script contains a NUL byte (byte offset 1), which Python source cannot hold");
  EXPECT_EQ(error_of(std::string("# coding: shift_jis\n\0", 21)),
            "a.py:2:1: script contains a NUL byte (byte offset 20), which Python source cannot hold");
}

} // namespace
} // namespace tpulaunch
