"""Small files made at test time, so no binary fixture has to be committed and explained.

ODT and ODS are written with odfpy; DOC and XLS are converted from them by LibreOffice (a real Word 97 and
Excel 97 writer) when it is installed. OOXML edge cases (billion laughs, zip bombs, Strict namespaces,
inline strings, text boxes) are python-docx or openpyxl output with one part rewritten.
"""

from __future__ import annotations

import ctypes
import io
import shutil
import subprocess
import zipfile
from pathlib import Path

WORD_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def odt(path: Path) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, Note, NoteBody, NoteCitation, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Quarterly Report"))
    paragraph = P(text="Revenue grew in the northern region.")
    note = Note(id="ftn1", noteclass="footnote")
    note.addElement(NoteCitation(text="1"))
    body = NoteBody()
    body.addElement(P(text="Audited figures."))
    note.addElement(body)
    paragraph.addElement(note)
    document.text.addElement(paragraph)
    document.text.addElement(H(outlinelevel=2, text="Regions"))
    items = List()
    for text in ("North: strong", "South: flat"):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    document.text.addElement(items)
    table = Table(name="Sales")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for cells in (("Region", "Sales"), ("North", "1200"), ("South", "800")):
        row = TableRow()
        for text in cells:
            cell = TableCell()
            cell.addElement(P(text=text))
            row.addElement(cell)
        table.addElement(row)
    document.text.addElement(table)
    document.save(str(path))
    return path


def ods(path: Path) -> Path:
    """A title row above the header, typed dates and numbers, a merged title, and a hidden sheet."""
    from odf.number import DateStyle as NumberDateStyle
    from odf.number import Day, Month, Year
    from odf.number import Text as NumberText
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.style import Style, TableProperties
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    date_format = NumberDateStyle(name="isoDate")
    date_format.addElement(Year(style="long"))
    date_format.addElement(NumberText(text="-"))
    date_format.addElement(Month(style="long"))
    date_format.addElement(NumberText(text="-"))
    date_format.addElement(Day(style="long"))
    document.automaticstyles.addElement(date_format)
    date_cell = Style(name="dateCell", family="table-cell", datastylename="isoDate")
    document.automaticstyles.addElement(date_cell)
    hidden = Style(name="hiddenTable", family="table")
    hidden.addElement(TableProperties(display=False))
    document.automaticstyles.addElement(hidden)

    sales = Table(name="Sales")

    def add_row(table: Table, cells: list) -> None:
        row = TableRow()
        for value in cells:
            if isinstance(value, tuple) and value[0] == "date":
                cell = TableCell(valuetype="date", datevalue=value[1], stylename=date_cell)
                cell.addElement(P(text=value[1]))
            elif isinstance(value, float):
                cell = TableCell(valuetype="float", value=str(value))
                cell.addElement(P(text=str(value)))
            elif isinstance(value, tuple) and value[0] == "span":
                cell = TableCell(valuetype="string", numbercolumnsspanned=value[2])
                cell.addElement(P(text=value[1]))
            elif value is None:
                cell = TableCell()
            else:
                cell = TableCell(valuetype="string")
                cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)

    add_row(sales, [("span", "Sales by region, 2023", 3), None, None])
    add_row(sales, ["Region", "Closed on", "Amount"])
    add_row(sales, ["North", ("date", "2023-03-31"), 1200.5])
    add_row(sales, ["South", ("date", "2023-06-30"), 800.0])
    document.spreadsheet.addElement(sales)
    secret = Table(name="Secret", stylename=hidden)
    add_row(secret, ["classified payroll", "do not index"])
    document.spreadsheet.addElement(secret)
    document.save(str(path))
    return path


def soffice_convert(source: Path, target_format: str, workdir: Path) -> Path | None:
    """LibreOffice's conversion of `source`, or None where LibreOffice is not installed."""
    soffice = shutil.which("soffice")
    if soffice is None:
        return None
    out = workdir / "converted"
    subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={(workdir / 'lo-profile').as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            target_format,
            "--outdir",
            str(out),
            str(source),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    converted = out / f"{source.stem}.{target_format}"
    return converted if converted.exists() else None


def docx_bytes(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def rewrite_zip(data: bytes, replacements: dict[str, bytes], extra: dict[str, bytes] | None = None) -> bytes:
    """The same package with some members replaced and others added."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            target.writestr(member, replacements.get(member.filename, source.read(member)))
        for name, content in (extra or {}).items():
            target.writestr(name, content)
    return buffer.getvalue()


BILLION_LAUGHS = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>
"""


def zip_bomb_docx(uncompressed_mb: int = 64) -> bytes:
    """A genuine DOCX plus one member of zeros that compresses about a thousand to one."""
    buffer = io.BytesIO(docx_bytes(["An innocent looking document."]))
    with (
        zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/media/zeros.bin", "w") as member,
    ):
        block = bytes(1024 * 1024)
        for _ in range(uncompressed_mb):
            member.write(block)
    return buffer.getvalue()


def lying_zip_directory(data: bytes, member_name: str, declared_size: int) -> bytes:
    """The package with one member's uncompressed size in the central directory set to `declared_size`."""
    name = member_name.encode()
    position = data.find(b"PK\x01\x02")
    while position != -1:
        name_length = int.from_bytes(data[position + 28 : position + 30], "little")
        if data[position + 46 : position + 46 + name_length] == name:
            patched = bytearray(data)
            patched[position + 24 : position + 28] = declared_size.to_bytes(4, "little")
            return bytes(patched)
        position = data.find(b"PK\x01\x02", position + 4)
    raise ValueError(f"{member_name} not in the central directory")


def strict_docx(paragraphs: list[str]) -> bytes:
    """python-docx output with its Transitional namespaces renamed to ISO 29500 Strict ones."""
    data = docx_bytes(paragraphs)
    renames = [
        (
            b"http://schemas.openxmlformats.org/wordprocessingml/2006/main",
            b"http://purl.oclc.org/ooxml/wordprocessingml/main",
        ),
        (
            b"http://schemas.openxmlformats.org/officeDocument/2006/relationships",
            b"http://purl.oclc.org/ooxml/officeDocument/relationships",
        ),
    ]
    source = zipfile.ZipFile(io.BytesIO(data))
    replaced = {}
    for member in source.infolist():
        content = source.read(member)
        if member.filename.endswith((".xml", ".rels")):
            for transitional, strict in renames:
                content = content.replace(transitional, strict)
        replaced[member.filename] = content
    return rewrite_zip(data, replaced)


def docx_with_text_box_and_comment() -> bytes:
    """A paragraph carrying a floating text box, and a comment anchored on a run."""
    import docx

    document = docx.Document()
    document.add_heading("Site Survey", level=1)
    paragraph = document.add_paragraph("The survey covered the east wing.")
    document.add_comment(paragraph.runs, text="Check the east wing numbers again.", author="Dana")
    buffer = io.BytesIO()
    document.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    body = source.read("word/document.xml")
    # Word writes a text box twice: as a DrawingML shape (mc:Choice) and as VML for old readers (mc:Fallback).
    box_paragraph = "<w:p><w:r><w:t>Callout: asbestos found in boiler room</w:t></w:r></w:p>"
    text_box = (
        '<w:p><w:r><mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
        ' xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
        '<mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx>'
        f"<w:txbxContent>{box_paragraph}</w:txbxContent></wps:txbx></wps:wsp></w:drawing></mc:Choice>"
        f"<mc:Fallback><w:pict><w:txbxContent>{box_paragraph}</w:txbxContent></w:pict></mc:Fallback>"
        "</mc:AlternateContent></w:r></w:p>"
    ).encode()
    body = body.replace(b"<w:body>", b"<w:body>" + text_box, 1)
    return rewrite_zip(buffer.getvalue(), {"word/document.xml": body})


DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _pdfium_text(
    document: object, page: object, font: object, text: str, x: float, y: float, size: float
) -> None:
    import pypdfium2.raw as raw

    obj = raw.FPDFPageObj_CreateTextObj(document.raw, font, size)
    encoded = (text + "\x00").encode("utf-16-le")
    raw.FPDFText_SetText(
        obj, ctypes.cast(ctypes.create_string_buffer(encoded), ctypes.POINTER(ctypes.c_ushort))
    )
    raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
    raw.FPDFPage_InsertObject(page.raw, obj)


def pdf_with_lines(
    pages: list[list[tuple[float, float, str]]], *, font_path: Path | None = None, size: float = 11
) -> bytes:
    """A PDF written by PDFium: each page a list of (x, y, text) runs in Helvetica, or in the TrueType
    font at `font_path` (embedded as a CID font, the way most producers embed fonts)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    document = pdfium.PdfDocument.new()
    if font_path is None:
        font = raw.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    else:
        data = font_path.read_bytes()
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        font = raw.FPDFText_LoadFont(document.raw, buffer, len(data), raw.FPDF_FONT_TRUETYPE, True)
    for runs in pages:
        page = document.new_page(612, 792)
        for x, y, text in runs:
            _pdfium_text(document, page, font, text, x, y, size)
        page.gen_content()
    buffer_out = io.BytesIO()
    document.save(buffer_out)
    return buffer_out.getvalue()


def without_to_unicode(data: bytes) -> bytes:
    """The PDF with every font's /ToUnicode map removed: what a careless producer writes. Text in an
    embedded CID font then has no way back to Unicode, and extractors return symbols."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for page in writer.pages:
        fonts = page.get("/Resources", {}).get("/Font", {})
        for name in list(fonts):
            font = fonts[name].get_object()
            if NameObject("/ToUnicode") in font:
                del font[NameObject("/ToUnicode")]
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# Quarter turns anticlockwise as PDF text matrices (a, b, c, d), and the /Rotate that shows them upright.
_TURN_MATRIX = {0: (1, 0, 0, 1), 1: (0, 1, -1, 0), 2: (-1, 0, 0, -1), 3: (0, -1, 1, 0)}
_TURN_ROTATE = {0: 0, 1: 90, 2: 180, 3: 270}


def pdf_with_turned_page(
    runs: list[tuple[float, float, str]],
    *,
    turn: int,
    shown: tuple[float, float] = (792, 612),
    stamps: list[tuple[float, float, str]] | None = None,
    size: float = 10,
) -> bytes:
    """One page drawn turned by `turn` quarters anticlockwise, with the /Rotate that shows it upright: how
    a landscape report is often printed to PDF (a portrait page turned for display). `runs` are
    (x, y, text) as the reader sees the page, `shown` its size as shown; `stamps` are runs drawn
    unturned in the page's own space (a filing stamp along the paper's edge)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    width, height = shown if turn % 2 == 0 else shown[::-1]  # the MediaBox
    document = pdfium.PdfDocument.new()
    font = raw.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    page = document.new_page(width, height)
    a, b, c, d = _TURN_MATRIX[turn]
    for x, y, text in runs:
        px, py = {0: (x, y), 1: (width - y, x), 2: (width - x, height - y), 3: (y, height - x)}[turn]
        obj = raw.FPDFPageObj_CreateTextObj(document.raw, font, size)
        encoded = (text + "\x00").encode("utf-16-le")
        raw.FPDFText_SetText(
            obj, ctypes.cast(ctypes.create_string_buffer(encoded), ctypes.POINTER(ctypes.c_ushort))
        )
        raw.FPDFPageObj_Transform(obj, a, b, c, d, px, py)
        raw.FPDFPage_InsertObject(page.raw, obj)
    for x, y, text in stamps or []:
        _pdfium_text(document, page, font, text, x, y, 7)
    page.set_rotation(_TURN_ROTATE[turn])
    page.gen_content()
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


IDENTITY_TO_UNICODE = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def
/CMapType 2 def
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
1 beginbfrange
<0000> <FFFF> <0000>
endbfrange
endcmap
CMapName currentdict /CIDInit /ProcSet findresource pop end
end
"""


def with_glyph_ids_as_unicode(data: bytes) -> bytes:
    """The PDF with every font's /ToUnicode map replaced by one that maps each glyph id to the code point
    of the same number, as some producers write it: the text layer then says "4XDUWHUO" where the page
    shows "Quarterly", in printable characters no reader flags as unmapped."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject, StreamObject

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for page in writer.pages:
        fonts = page.get("/Resources", {}).get("/Font", {})
        for name in list(fonts):
            font = fonts[name].get_object()
            if NameObject("/ToUnicode") in font:
                stream = StreamObject()
                stream.set_data(IDENTITY_TO_UNICODE)
                font[NameObject("/ToUnicode")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_with_invisible_text(lines: list[str]) -> bytes:
    """A page whose only text is invisible (render mode 3, as OCR tools lay text over a scan) in a font
    without a ToUnicode map, over no image at all: there is nothing for OCR to read either."""
    import pypdfium2.raw as raw

    data = pdf_with_lines([[(72, 700 - 20 * i, line) for i, line in enumerate(lines)]], font_path=DEJAVU)
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    page = document[0]
    for obj in page.get_objects(filter=(raw.FPDF_PAGEOBJ_TEXT,)):
        raw.FPDFTextObj_SetTextRenderMode(obj.raw, raw.FPDF_TEXTRENDERMODE_INVISIBLE)
    page.gen_content()
    out = io.BytesIO()
    document.save(out)
    return without_to_unicode(out.getvalue())


def pdf_with_scan(lines: list[str], *, degrees: int = 0) -> bytes:
    """One page that is only a picture of printed text, turned `degrees` anticlockwise (a page fed into
    the scanner sideways or upside down)."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(DEJAVU), 44)
    for i, line in enumerate(lines):
        draw.text((150, 200 + 70 * i), line, fill=0, font=font)
    image = image.rotate(degrees, expand=True, fillcolor=255)
    document = pdfium.PdfDocument.new()
    width, height = image.width * 72 / 200, image.height * 72 / 200
    page = document.new_page(width, height)
    picture = pdfium.PdfImage.new(document)
    picture.set_bitmap(pdfium.PdfBitmap.from_pil(image))
    picture.set_matrix(pdfium.PdfMatrix().scale(width, height))
    page.insert_obj(picture)
    page.gen_content()
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pdf_with_image_page(text_lines: list[str], image_lines: list[str]) -> bytes:
    """Page 1 has a text layer; page 2 is a picture of printed text (a scan pasted between pages)."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw, ImageFont

    data = pdf_with_lines([[(72, 700 - 20 * i, line) for i, line in enumerate(text_lines)]])
    document = pdfium.PdfDocument(data)
    image = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(DEJAVU), 48)
    for i, line in enumerate(image_lines):
        draw.text((150, 200 + 80 * i), line, fill=0, font=font)
    page = document.new_page(612, 792)
    picture = pdfium.PdfImage.new(document)
    picture.set_bitmap(pdfium.PdfBitmap.from_pil(image))
    picture.set_matrix(pdfium.PdfMatrix().scale(612, 792))
    page.insert_obj(picture)
    page.gen_content()
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def inline_string_xlsx(*, declare_shared_strings: bool = False) -> bytes:
    """A minimal workbook whose text cells are inline (t="inlineStr"), as many exporters write them. With
    declare_shared_strings, its content types also declare xl/sharedStrings.xml, a part it never wrote (as
    some exporters do): openpyxl then refuses the file."""
    shared_strings = (
        '<Override PartName="/xl/sharedStrings.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
        if declare_shared_strings
        else ""
    )
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            f"{shared_strings}</Types>"
        ),
        "_rels/.rels": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/>'
            "</Relationships>"
        ),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{main}" xmlns:r="{rel}">'
            '<sheets><sheet name="Visits" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
            "</Relationships>"
        ),
        "xl/worksheets/sheet1.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}"><sheetData>'
            '<row r="1"><c r="A1" t="inlineStr"><is><t>City</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>Visitors</t></is></c></row>'
            '<row r="2"><c r="A2" t="inlineStr"><is><t>Lyon</t></is></c><c r="B2"><v>12</v></c></row>'
            "</sheetData></worksheet>"
        ),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in parts.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def rich_text_xlsx(*, declare_shared_strings: bool = False) -> bytes:
    """`inline_string_xlsx` whose cells are inline rich text: runs in several styles, the space between
    two words at the start of the second run and, as exporters often write it, no xml:space="preserve"."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>Style</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>Count</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><r><t>Regular</t></r>'
        '<r><rPr><b/></rPr><t> Bold</t></r></is></c><c r="B2"><v>3</v></c></row>'
        '<row r="3"><c r="A3" t="inlineStr"><is><r><rPr><i/></rPr><t>Italic </t></r>'
        '<r><t>then plain</t></r><rPh sb="0" eb="1"><t>ruby</t></rPh></is></c>'
        '<c r="B3"><v>4</v></c></row>'
        "</sheetData></worksheet>"
    )
    return rewrite_zip(
        inline_string_xlsx(declare_shared_strings=declare_shared_strings),
        {"xl/worksheets/sheet1.xml": sheet.encode()},
    )
